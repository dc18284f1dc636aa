"""Helpers shared by the benchmark scripts: timing, number format, tables.

Not part of the package; the scripts put their own directory first on
``sys.path`` (Python does so when a script is run), so ``import _bench_utils``
finds this file.
"""

import os
import platform
import statistics
import sys
import time

import numba
import numpy as np


def median_ms(fn, repeats):
    """Median wall-clock time of ``fn()`` over ``repeats`` calls, in ms."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def fmt(x, digits=2):
    """Three significant digits, fewer decimals for larger numbers."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    # Decide the format on the rounded value, so 9.999 prints as 10.0.
    x = float(f"{x:.3g}")
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


def rst_table(header, rows):
    """A reStructuredText simple table (also readable as plain text)."""
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    rule = "  ".join("=" * w for w in widths)
    lines = [rule]
    lines.append("  ".join(c.ljust(w) for c, w in zip(cells[0], widths)).rstrip())
    lines.append(rule)
    for r in cells[1:]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.append(rule)
    return "\n".join(lines)


def machine_header():
    """Lines describing the machine, the versions and the current load."""
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import sksparse_struct

    lines = [
        f"machine: {cpu}, {os.cpu_count()} logical cores, "
        f"{platform.system()} {platform.release()}",
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"numba {numba.__version__} (threads: {numba.config.NUMBA_NUM_THREADS}), "
        f"sksparse_struct {sksparse_struct.__version__}",
    ]
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        lines.append(f"load average (1, 5, 15 min): {load}")
    except OSError:
        pass
    return lines


def numba_cache_misses():
    """Number of kernel compilations in this process that missed the cache."""
    from numba.core.registry import CPUDispatcher

    misses = 0
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("sksparse_struct") or mod is None:
            continue
        for obj in vars(mod).values():
            if isinstance(obj, CPUDispatcher):
                misses += sum(obj.stats.cache_misses.values())
    return misses


def loglog_slope(sizes, times):
    """Least-squares slope of log(time) against log(size): the growth exponent."""
    x = np.log(np.asarray(sizes, dtype=float))
    y = np.log(np.asarray(times, dtype=float))
    return float(np.polyfit(x, y, 1)[0])
