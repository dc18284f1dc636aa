"""A software prefetch for numba kernels (LLVM's ``llvm.prefetch`` intrinsic).

Scoring the arcs of a sentence reads weights at hashed, scattered indices:
every read misses the cache, and the arithmetic that computes the next
indices keeps the processor from running far enough ahead to overlap them.
Asking for the lines early lets them arrive while other work goes on. A
prefetch is only a hint: it never faults and never changes a result.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._numba import njit


@intrinsic
def prefetch(typingctx, array, index):
    """Hint that ``array[index]`` (1-d, contiguous) will be read soon; no bounds check."""
    if not (isinstance(array, types.Array) and array.ndim == 1
            and isinstance(index, types.Integer)):
        return None
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        array_type, _ = signature.args
        arr = context.make_array(array_type)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, array_type, arr, [args[1]],
                                       wraparound=False)
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
        fn = builder.module.declare_intrinsic("llvm.prefetch", [byte_ptr], fnty)
        # Read access (0), keep in all cache levels (locality 3), data cache (1).
        builder.call(fn, [builder.bitcast(ptr, byte_ptr), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(inline="always")
def prefetch_and_sum(next_buf, next_k, buf, k, w):
    """``sum(w[buf[:k]])`` in index order, prefetching ``w[next_buf[:next_k]]`` on the way.

    For kernels that sum scattered weights (hashed features): the indices
    of the next item are computed, then the previous item is summed while
    the next one's lines are requested, one request between two reads
    rather than all of them in a burst (the processor can only wait for so
    many lines at once). The sum is the same, term by term, as reading each
    weight when needed.
    """
    s = 0.0
    top = k if k > next_k else next_k
    for j in range(top):
        if j < next_k:
            prefetch(w, next_buf[j])
        if j < k:
            s += w[buf[j]]
    return s
