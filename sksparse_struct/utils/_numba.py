"""The one place where numba compilation defaults are set.

Every compiled kernel in the package is decorated with :func:`njit` from this
module, so that caching and other options are set consistently. Kernels live
in ``_*_fast.py`` modules, bound to module-level names, and only call other
module-level kernels: a cached function that receives a jitted function as an
argument, or closes over one, misses the on-disk cache in every new process
and is compiled again (closures over integer or boolean constants are cached
by those values; see ``doc/developers.rst``).
"""

import hashlib
import os
import time
from pathlib import Path

import numba
from numba.core import types
from numba.core.caching import FunctionCache
from numba.core.registry import CPUDispatcher

__all__ = ["NUMBA_OPTIONS", "njit"]

# cache=True: compiled machine code is written next to the module and reused by
# later processes, which keeps the cold start of the test suite short.
# fastmath stays off: we promise results to the last digit, and fastmath
# licenses reassociation and assumes no inf/nan (we use -inf as a mask).
# no_cfunc_wrapper: the C-callable wrapper only serves kernels passed as
# first-class functions, which ours never are; building it is compile time.
NUMBA_OPTIONS = {"cache": True, "nogil": True, "fastmath": False, "no_cfunc_wrapper": True}

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_STAMP_NAME = "numba-kernel-sources.stamp"


def _kernel_sources_stamp(package_dir):
    """A digest of the path, size and mtime of every kernel module."""
    digest = hashlib.sha1()
    for path in sorted(package_dir.rglob("_*_fast.py")):
        stat = path.stat()
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _user_cache_folder(cache_dir, source_dir):
    """numba's cache folder for the modules of ``source_dir`` under ``NUMBA_CACHE_DIR``.

    The layout of numba's ``UserProvidedCacheLocator``: the directory's name
    and the SHA-1 of its absolute path.
    """
    path = os.path.abspath(source_dir)
    digest = hashlib.sha1(path.encode()).hexdigest()
    return Path(cache_dir) / f"{os.path.split(path)[-1]}_{digest}"


def _cache_roots(package_dir, cache_dir):
    """Where numba keeps the package's caches: ``(files, stamp file)`` pairs.

    Next to the sources (``__pycache__``) by default; with ``cache_dir``
    (``NUMBA_CACHE_DIR``) also in one folder per source directory there.
    """
    roots = [(lambda: package_dir.rglob("__pycache__/*.nb[ic]"),
              package_dir / "__pycache__" / _STAMP_NAME)]
    if cache_dir:
        folders = sorted({_user_cache_folder(cache_dir, path.parent)
                          for path in package_dir.rglob("_*_fast.py")})
        digest = hashlib.sha1(str(package_dir.resolve()).encode()).hexdigest()
        roots.append((lambda: (f for folder in folders for f in folder.glob("*.nb[ic]")),
                      Path(cache_dir) / f"{package_dir.name}_{digest}.{_STAMP_NAME}"))
    return roots


def clear_stale_kernel_caches(package_dir=_PACKAGE_DIR, cache_dir=None):
    """Delete numba's on-disk caches of the package when any kernel module changed.

    numba invalidates a cached function only when *its own* source file
    changes, yet a kernel compiled with a call to a kernel of another module
    embeds that callee's machine code. After editing one ``_*_fast.py`` file
    (or a ``git pull``), the caches of the kernels calling into it would run
    the old code, with wrong results or crashes. So whenever any kernel module
    changed since the caches were written, all of them are dropped and
    recompiled: those next to the sources and, when ``cache_dir`` (numba's
    ``NUMBA_CACHE_DIR``) is given, those numba keeps there. Returns whether
    caches were cleared. Read-only installs (where numba caches elsewhere and
    files never change) are left alone.
    """
    cleared = False
    try:
        stamp = _kernel_sources_stamp(package_dir)
    except OSError:
        return False
    for cached_files, stamp_file in _cache_roots(package_dir, cache_dir):
        try:
            if stamp_file.is_file() and stamp_file.read_text() == stamp:
                continue
            for cached in list(cached_files()):
                cached.unlink(missing_ok=True)
            stamp_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = stamp_file.with_name(f"{_STAMP_NAME}.{os.getpid()}")
            tmp.write_text(stamp)
            os.replace(tmp, stamp_file)
            cleared = True
        except OSError:
            continue
    return cleared


clear_stale_kernel_caches(cache_dir=numba.config.CACHE_DIR or None)


def _import_stamp():
    try:
        return _kernel_sources_stamp(_PACKAGE_DIR)
    except OSError:
        return None


# The kernel sources this process imported (None: they could not be read).
_IMPORTED_SOURCES = _import_stamp()


_last_check = [-float("inf"), True]  # (when, result) of the last look at the disk


def imported_sources_current():
    """Whether the kernel modules on disk are still those this process imported.

    They change under a running process when a kernel module is edited, a
    branch checked out or the package upgraded while it runs. Looks at the
    disk (about a millisecond) at most once a second: a warm start loads
    hundreds of kernels.
    """
    if _IMPORTED_SOURCES is None:
        return True
    now = time.monotonic()
    if now - _last_check[0] >= 1.0:
        _last_check[:] = [now, _import_stamp() == _IMPORTED_SOURCES]
    return _last_check[1]


class _KernelCache(FunctionCache):
    """numba's on-disk cache, used only while the sources are those imported.

    A process that imported the old sources and compiles after they changed
    would save machine code built from them, with a cache key (the
    function's own bytecode and file) that other processes take for current;
    and a cache written by a process that imported the new sources would
    not match this process's code in memory. Either mix ran code of two
    versions together, with wrong results or a crash. After a change, a
    running process therefore keeps what it compiles to itself and loads
    nothing; new processes start from clean caches
    (:func:`clear_stale_kernel_caches`).
    """

    def load_overload(self, sig, target_context):
        if not imported_sources_current():
            return None
        return super().load_overload(sig, target_context)

    def save_overload(self, sig, data):
        if imported_sources_current():
            super().save_overload(sig, data)


class _Kernel(CPUDispatcher):
    """A dispatcher that compiles one version per argument *type*, not per constant.

    numba types a constant argument of a call between kernels as a literal
    (``Literal[int](3)``) and compiles a separate version of the callee for
    every distinct constant: a hashing helper called with 40 different
    template numbers was compiled 40 times. Nothing in the package needs a
    callee specialised on a constant, so calls between kernels drop the
    literal types first.
    """

    def get_call_template(self, args, kws):
        args = tuple(types.unliteral(a) for a in args)
        kws = {name: types.unliteral(a) for name, a in kws.items()}
        return super().get_call_template(args, kws)

    def enable_caching(self):
        self._cache = _KernelCache(self.py_func)


class _InternalKernel(_Kernel):
    """A kernel only other kernels call: no Python entry point (``njit(internal=True)``).

    numba builds, for every compiled kernel, a wrapper that converts Python
    arguments (arrays, named tuples) and results; for a kernel only called
    from compiled code that wrapper is pure compile time. Without it a call
    from Python would crash the interpreter, so it raises instead.
    """

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"{self.py_func.__module__}.{self.py_func.__qualname__} is compiled for calls "
            "from other kernels only (njit(internal=True)); call it from a kernel, or "
            "drop internal=True"
        )


def njit(function=None, *, internal=False, **options):
    """``numba.njit`` with the package's options (:data:`NUMBA_OPTIONS`).

    Use as ``@njit`` or ``@njit(option=value, ...)``. With ``internal=True``
    the kernel can only be called from other kernels (see
    :class:`_InternalKernel`): for helpers no Python code calls, it saves
    compile time on every first run.
    """
    options = {**NUMBA_OPTIONS, **options}
    cache = options.pop("cache")
    local_types = options.pop("locals", {})
    if internal:
        options["no_cpython_wrapper"] = True
    kind = _InternalKernel if internal else _Kernel

    def decorate(py_func):
        kernel = kind(py_func=py_func, locals=local_types,
                      targetoptions={**options, "nopython": True})
        if cache:
            kernel.enable_caching()
        return kernel

    return decorate if function is None else decorate(function)
