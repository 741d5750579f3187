"""How many threads llama.cpp should run: the CPUs this process may really use, not the host's.

``os.cpu_count()`` counts the host. A container, a Binder pod or a ``taskset`` sees fewer,
in one of three ways, and the smallest wins:

* the CPU affinity mask (``os.sched_getaffinity``: ``taskset``, cpuset cgroups, Docker
  ``--cpuset-cpus``);
* a cgroup v2 CPU quota, ``cpu.max`` = ``"$MAX $PERIOD"`` (``"max 100000"``: no limit), in
  the process's own cgroup *and every ancestor* (the tightest applies; inside a container
  the process usually sees its own cgroup as ``/``, the file at ``/sys/fs/cgroup/cpu.max``);
* a cgroup v1 CPU quota, ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (quota ``-1``: no
  limit), under the ``cpu`` controller's mount, own cgroup and ancestors.

Docker ``--cpus=2``, Kubernetes ``limits.cpu`` and Binder's CPU limit are quotas: none of
them shows in ``os.cpu_count()`` or the affinity mask. A quota of 1.5 CPUs is 1.5
CPU-seconds per second for all threads together, so it is rounded *down*: llama.cpp's
threads wait for each other at every layer, and a thread pool throttled in the middle of
that wait is far slower than one thread fewer (measured here beside one busy process:
2 threads generated 8.9 tokens/s, 1 thread 49).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

#: Where cgroup file systems are mounted, and the files that say which cgroup we are in.
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
PROC_MOUNTS = Path("/proc/self/mounts")

#: The most threads the lab starts by default: a 135M model gains little beyond four.
MAX_DEFAULT_THREADS = 4
THREADS_ENV = "REACT_LAB_THREADS"


def affinity_cpus() -> int:
    """CPUs in this process's affinity mask (``os.cpu_count()`` where the OS has no mask)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def parse_cpu_max(text: str) -> float | None:
    """CPUs granted by a cgroup v2 ``cpu.max`` line (``"150000 100000"`` -> 1.5); None = no limit.

    An empty or malformed line counts as no limit (never raises).
    """
    fields = (text or "").split()
    if not fields or fields[0] == "max":
        return None
    try:
        quota = int(fields[0])
        period = int(fields[1]) if len(fields) > 1 else 100_000
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _ancestors(mount: Path, cgroup: str) -> list[Path]:
    """``mount/cgroup`` and each folder above it, up to ``mount`` itself (deepest first)."""
    parts = [p for p in cgroup.strip("/").split("/") if p and p != ".."]
    return [mount.joinpath(*parts[:i]) for i in range(len(parts), -1, -1)]


def _own_cgroups(proc_cgroup: Path) -> tuple[str | None, str | None]:
    """This process's cgroup in the v2 hierarchy and under the v1 ``cpu`` controller."""
    v2 = v1 = None
    for line in (_read(proc_cgroup) or "").splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2 = path
        elif "cpu" in controllers.split(","):
            v1 = path
    return v2, v1


def _mounts(proc_mounts: Path) -> tuple[Path | None, Path | None]:
    """Mount points of the cgroup v2 hierarchy and of the v1 ``cpu`` controller (None if absent)."""
    v2 = v1 = None
    for line in (_read(proc_mounts) or "").splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        where, fstype, options = Path(fields[1]), fields[2], fields[3].split(",")
        if fstype == "cgroup2" and v2 is None:
            v2 = where
        elif fstype == "cgroup" and "cpu" in options and v1 is None:
            v1 = where
    return v2, v1


def _v1_quota(folder: Path) -> float | None:
    try:
        quota = int(_read(folder / "cpu.cfs_quota_us") or "-1")
        period = int(_read(folder / "cpu.cfs_period_us") or "100000")
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def cgroup_cpu_quota(
    root: Path = CGROUP_ROOT,
    proc_cgroup: Path = PROC_CGROUP,
    proc_mounts: Path | None = PROC_MOUNTS,
) -> float | None:
    """CPUs the cgroup quotas allow this process (1.5 = one and a half); None = no quota.

    Reads cgroup v2 ``cpu.max`` and v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` in
    the process's cgroup and every ancestor, and returns the smallest limit found. The
    mounts come from ``proc_mounts``; where it names none (or is None, as in the tests'
    fake trees) the usual layout under ``root`` is assumed: v2 at ``root`` or
    ``root/unified``, v1 ``cpu`` at ``root/cpu`` or ``root/cpu,cpuacct``. Never raises.
    """
    v2_cgroup, v1_cgroup = _own_cgroups(proc_cgroup)
    v2_mount, v1_mount = _mounts(proc_mounts) if proc_mounts is not None else (None, None)
    if v2_mount is None:
        v2_mount = next(
            (p for p in (root, root / "unified") if (p / "cgroup.controllers").exists()), None
        )
    if v1_mount is None:
        v1_mount = next(
            (p for p in (root / "cpu", root / "cpu,cpuacct") if (p / "cpu.cfs_quota_us").exists()),
            None,
        )
    limits: list[float] = []
    if v2_mount is not None and v2_cgroup is not None:
        limits += [
            cpus
            for d in _ancestors(v2_mount, v2_cgroup)
            if (cpus := parse_cpu_max(_read(d / "cpu.max") or "")) is not None
        ]
    if v1_mount is not None and v1_cgroup is not None:
        limits += [
            cpus for d in _ancestors(v1_mount, v1_cgroup) if (cpus := _v1_quota(d)) is not None
        ]
    return min(limits) if limits else None


def usable_cpus(**where) -> int:
    """Whole CPUs this process may use, at least 1.

    The affinity mask, capped by the cgroup quota rounded down.

    ``where`` is passed to :func:`cgroup_cpu_quota` (the tests point it at fake trees).
    """
    cpus = affinity_cpus()
    quota = cgroup_cpu_quota(**where)
    if quota is not None:
        cpus = min(cpus, max(1, math.floor(quota + 1e-9)))
    return cpus


def default_threads(cap: int = MAX_DEFAULT_THREADS) -> int:
    """Threads for llama.cpp.

    ``REACT_LAB_THREADS`` if set, else :func:`usable_cpus` (at most ``cap``).

    Used for both of llama.cpp's thread counts: generation (``n_threads``) and prompt
    evaluation (``n_threads_batch``, which llama-cpp-python otherwise sets to the host's
    CPU count). Raises ``ValueError`` if ``REACT_LAB_THREADS`` is not a whole number.
    """
    env = os.environ.get(THREADS_ENV, "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(
                f"{THREADS_ENV}={env!r} is not a whole number; set it to a "
                "thread count such as 2, or unset it"
            ) from None
    return max(1, min(cap, usable_cpus()))
