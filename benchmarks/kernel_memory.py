"""Benchmark: peak memory of a kernel that runs a notebook top to bottom (Binder gives ~2 GB).

Run: ``.venv/bin/python benchmarks/kernel_memory.py [notebooks/NN_x.ipynb ...]`` (default:
every notebook). Executes each notebook in a fresh kernel with nbclient, then asks the
kernel for its own peak resident set size (``VmHWM`` in ``/proc/self/status``, KiB). Not
``ru_maxrss``: Linux carries that across ``execve``, so a kernel started by a process that
holds the model would report at least that process's size. Nothing is saved.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

PROBE = (
    "print('PEAK_KIB', next(line.split()[1] for line in open('/proc/self/status') "
    "if line.startswith('VmHWM:')))"
)


def peak_mib(path: Path) -> tuple[float, float]:
    """Execute ``path`` in a new kernel; return (peak RSS in MiB, wall seconds)."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    t0 = time.perf_counter()
    NotebookClient(
        nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    kib = int(text.split("PEAK_KIB")[1].split()[0])
    return kib / 1024, time.perf_counter() - t0


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]] or sorted(Path("notebooks").glob("[0-9][0-9]_*.ipynb"))
    print(f"{'notebook':36} {'peak MiB':>9} {'seconds':>8}")
    for path in paths:
        mib, secs = peak_mib(path)
        print(f"{path.name:36} {mib:>9.0f} {secs:>8.1f}")


if __name__ == "__main__":
    main()
