"""llama.cpp's thread count from the CPUs this process may use.

Affinity and cgroup quotas (fake trees).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from react_lab.lab.backends import threads
from react_lab.lab.backends.threads import (
    cgroup_cpu_quota,
    default_threads,
    parse_cpu_max,
    usable_cpus,
)


def tree(tmp_path: Path, files: dict[str, str], cgroup: str, mounts: str | None = None) -> dict:
    """Write a fake cgroup tree; return the keyword arguments that point the readers at it."""
    for rel, text in files.items():
        path = tmp_path / "cg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "cgroup").write_text(cgroup)
    where = {"root": tmp_path / "cg", "proc_cgroup": tmp_path / "cgroup", "proc_mounts": None}
    if mounts is not None:
        (tmp_path / "mounts").write_text(mounts.replace("ROOT", str(tmp_path / "cg")))
        where["proc_mounts"] = tmp_path / "mounts"
    return where


@pytest.mark.parametrize(
    "line, cpus",
    [
        ("max 100000", None),
        ("200000 100000", 2.0),
        ("150000 100000", 1.5),
        ("50000 100000", 0.5),
        ("100000", 1.0),
        ("", None),
        ("junk", None),
        ("0 100000", None),
    ],
)
def test_parse_cpu_max(line, cpus):
    assert parse_cpu_max(line) == cpus


def test_v2_container_sees_its_limit_at_the_root(tmp_path):
    where = tree(
        tmp_path, {"cgroup.controllers": "cpu memory", "cpu.max": "150000 100000\n"}, "0::/\n"
    )
    assert cgroup_cpu_quota(**where) == 1.5


def test_v2_the_tightest_ancestor_wins(tmp_path):
    where = tree(
        tmp_path,
        {"cgroup.controllers": "cpu", "a/cpu.max": "100000 100000", "a/b/cpu.max": "max 100000"},
        "0::/a/b\n",
    )
    assert cgroup_cpu_quota(**where) == 1.0


def test_v2_without_a_limit(tmp_path):
    where = tree(tmp_path, {"cgroup.controllers": "cpu", "cpu.max": "max 100000"}, "0::/\n")
    assert cgroup_cpu_quota(**where) is None


def test_v1_quota_under_the_cpu_controller(tmp_path):
    where = tree(
        tmp_path,
        {
            "cpu/cpu.cfs_quota_us": "-1",
            "cpu/cpu.cfs_period_us": "100000",
            "cpu/docker/x/cpu.cfs_quota_us": "250000",
            "cpu/docker/x/cpu.cfs_period_us": "100000",
        },
        "4:memory:/m\n1:cpu,cpuacct:/docker/x\n0::/\n",
    )
    assert cgroup_cpu_quota(**where) == 2.5


def test_v1_mount_read_from_proc_mounts(tmp_path):
    where = tree(
        tmp_path,
        {"cpuX/cpu.cfs_quota_us": "100000", "cpuX/cpu.cfs_period_us": "100000"},
        "1:cpu:/\n",
        mounts="cgroup ROOT/cpuX cgroup rw,relatime,cpu 0 0\n",
    )
    assert cgroup_cpu_quota(**where) == 1.0


def test_nothing_to_read_means_no_quota(tmp_path):
    assert cgroup_cpu_quota(**tree(tmp_path, {}, "")) is None


def test_a_quota_is_rounded_down_and_never_below_one(tmp_path, monkeypatch):
    monkeypatch.setattr(threads, "affinity_cpus", lambda: 8)
    for line, cpus in (
        ("150000 100000", 1),
        ("50000 100000", 1),
        ("max 100000", 8),
        ("400000 100000", 4),
    ):
        where = tree(tmp_path, {"cgroup.controllers": "cpu", "cpu.max": line}, "0::/\n")
        assert usable_cpus(**where) == cpus, line


def test_the_affinity_mask_wins_when_smaller(tmp_path, monkeypatch):
    monkeypatch.setattr(threads, "affinity_cpus", lambda: 2)
    where = tree(tmp_path, {"cgroup.controllers": "cpu", "cpu.max": "400000 100000"}, "0::/\n")
    assert usable_cpus(**where) == 2


def test_default_threads_follows_the_usable_cpus_up_to_the_cap(monkeypatch):
    monkeypatch.delenv("REACT_LAB_THREADS", raising=False)
    monkeypatch.setattr(threads, "usable_cpus", lambda: 1)
    assert default_threads() == 1
    monkeypatch.setattr(threads, "usable_cpus", lambda: 32)
    assert default_threads() == threads.MAX_DEFAULT_THREADS


def test_the_environment_overrides_and_a_bad_value_says_what_to_set(monkeypatch):
    monkeypatch.setenv("REACT_LAB_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("REACT_LAB_THREADS", "two")
    with pytest.raises(ValueError, match="REACT_LAB_THREADS='two' is not a whole number"):
        default_threads()


def test_this_machine(monkeypatch):
    monkeypatch.delenv("REACT_LAB_THREADS", raising=False)
    assert 1 <= default_threads() <= min(threads.MAX_DEFAULT_THREADS, threads.affinity_cpus())


V1_CPU = Path("/sys/fs/cgroup/cpu")


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or not (V1_CPU / "cpu.cfs_quota_us").exists(),
    reason="needs root and a cgroup v1 cpu controller to make a real limited cgroup",
)
def test_a_process_in_a_real_cgroup_with_a_quota_reads_it():
    """Make a cgroup with a 1.5-CPU quota, start a process in it, and read the quota from inside."""
    group = V1_CPU / "react_lab_threads_test"
    group.mkdir(exist_ok=True)
    try:
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("150000")
        code = (
            f"import os; open({str(group / 'cgroup.procs')!r}, 'w').write(str(os.getpid()));"
            "from react_lab.lab.backends.threads import cgroup_cpu_quota, usable_cpus;"
            "print(cgroup_cpu_quota(), usable_cpus())"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert out.stdout.split() == ["1.5", "1"]
    finally:
        group.rmdir()
