"""The guard against numba caches that outlive a change of a kernel module."""

import os
from pathlib import Path

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


def test_a_process_whose_kernel_sources_changed_neither_saves_nor_loads(monkeypatch, tmp_path):
    # Once the kernel modules on disk are no longer those this process
    # imported, its compilations stay in memory and it loads nothing: mixing
    # machine code built from two versions of the sources crashed processes.
    from sksparse_struct.utils import _numba

    code = (
        "from sksparse_struct.utils._numba import njit\n"
        "@njit\n"
        "def triple(x):\n"
        "    return 3 * x\n"
    )
    module_dir = tmp_path / "toy"
    module_dir.mkdir()
    (module_dir / "toy_kernels.py").write_text(code)
    monkeypatch.syspath_prepend(str(module_dir))
    import toy_kernels

    index = Path(toy_kernels.triple._cache._cache_file._index_path)
    # (The check looks at the disk at most once a second: forget the last.)
    monkeypatch.setattr(_numba, "_last_check", [-float("inf"), True])
    monkeypatch.setattr(_numba, "_IMPORTED_SOURCES", "sources of another version")
    assert not _numba.imported_sources_current()
    assert toy_kernels.triple(2) == 6
    assert not index.exists()  # not saved
    monkeypatch.undo()
    monkeypatch.syspath_prepend(str(module_dir))
    monkeypatch.setattr(_numba, "_last_check", [-float("inf"), True])
    assert _numba.imported_sources_current()
    assert toy_kernels.triple(2.0) == 6.0  # a new signature: saved
    assert index.exists()
    # A cache entry on disk is not loaded while the sources differ.
    monkeypatch.setattr(_numba, "_last_check", [-float("inf"), True])
    monkeypatch.setattr(_numba, "_IMPORTED_SOURCES", "sources of another version")
    from numba.core.registry import cpu_target
    sig = toy_kernels.triple.signatures[-1]
    assert toy_kernels.triple._cache.load_overload(sig, cpu_target.target_context) is None
    monkeypatch.undo()
    _numba._last_check[:] = [-float("inf"), True]
    loaded = toy_kernels.triple._cache.load_overload(sig, cpu_target.target_context)
    assert loaded is not None
