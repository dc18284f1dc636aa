"""The guard against numba caches that outlive a change of a kernel module."""

import os

from sksparse_struct.utils._numba import clear_stale_kernel_caches


def test_caches_cleared_when_a_kernel_module_changes(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    kernel = pkg / "sub" / "_thing_fast.py"
    kernel.write_text("x = 1\n")
    cached = pkg / "sub" / "__pycache__" / "_thing_fast.f-1.py311.1.nbc"
    index = pkg / "sub" / "__pycache__" / "_thing_fast.f-1.py311.nbi"
    for f in (cached, index):
        f.write_bytes(b"old machine code")

    # First look: no stamp yet, so caches of unknown age are dropped.
    assert clear_stale_kernel_caches(pkg)
    assert not cached.exists() and not index.exists()

    # Unchanged sources: caches written afterwards survive.
    cached.write_bytes(b"fresh")
    assert not clear_stale_kernel_caches(pkg)
    assert cached.exists()

    # A non-kernel module changing does not matter ...
    (pkg / "sub" / "_estimator.py").write_text("y = 2\n")
    assert not clear_stale_kernel_caches(pkg)
    assert cached.exists()

    # ... but any kernel module changing drops every cache of the package.
    stat = kernel.stat()
    os.utime(kernel, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert clear_stale_kernel_caches(pkg)
    assert not cached.exists()


def test_caches_under_numba_cache_dir_cleared_too(tmp_path):
    # With NUMBA_CACHE_DIR, numba keeps one folder per source directory there
    # (named as numba's own locator names it).
    from numba.core.caching import UserProvidedCacheLocator

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    kernel = pkg / "sub" / "_thing_fast.py"
    kernel.write_text("x = 1\n")
    cache_dir = tmp_path / "nbcache"
    folder = cache_dir / UserProvidedCacheLocator.get_suitable_cache_subpath(str(kernel))
    folder.mkdir(parents=True)
    cached = folder / "_thing_fast.f-1.py311.1.nbc"
    cached.write_bytes(b"old machine code")
    assert clear_stale_kernel_caches(pkg, cache_dir=str(cache_dir))
    assert not cached.exists()
    cached.write_bytes(b"fresh")
    assert not clear_stale_kernel_caches(pkg, cache_dir=str(cache_dir))
    assert cached.exists()
    stat = kernel.stat()
    os.utime(kernel, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert clear_stale_kernel_caches(pkg, cache_dir=str(cache_dir))
    assert not cached.exists()
