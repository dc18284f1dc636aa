"""The one place where numba compilation defaults are set.

Every compiled kernel in the package is decorated with :func:`njit` from this
module, so that caching and other options are set consistently. Kernels are
module-level functions that only call other module-level kernels: a cached
function that receives a jitted function as an argument misses the on-disk
cache in every new process (see DESIGN.md, "Known traps").
"""

import functools

import numba

__all__ = ["njit", "NUMBA_OPTIONS"]

# cache=True: compiled machine code is written next to the module and reused by
# later processes, which keeps the cold start of the test suite short.
# fastmath stays off: we promise results to the last digit, and fastmath
# licenses reassociation and assumes no inf/nan (we use -inf as a mask).
NUMBA_OPTIONS = {"cache": True, "nogil": True, "fastmath": False}

njit = functools.partial(numba.njit, **NUMBA_OPTIONS)
