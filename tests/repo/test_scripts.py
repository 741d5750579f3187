"""The shell scripts: ``scripts/workshop.sh`` run with stubbed setup, ``id`` and ``jupyter``."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _workshop(tmp_path: Path, uid: str, *args: str) -> list[list[str]]:
    """Run a copy of scripts/workshop.sh with stub setup, `id` and `jupyter`; each jupyter argv."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / "notebooks").mkdir()
    for name in ("01_text_protocol.ipynb", "02_the_loop.ipynb"):
        (root / "notebooks" / name).write_text("{}")
    shutil.copy(ROOT / "scripts" / "workshop.sh", root / "scripts")
    (root / "scripts" / "setup-env.sh").write_text("true\n")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    calls = tmp_path / "jupyter-calls"
    # One line per call of the stub jupyter, its arguments separated by a tab.
    for path, body in (
        (root / ".venv" / "bin" / "jupyter", f'(IFS="$(printf \'\\t\')"; echo "$*") >> {calls}'),
        (stubs / "id", f"echo {uid}"),
    ):
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}"}
    subprocess.run(
        ["bash", str(root / "scripts" / "workshop.sh"), *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line.split("\t") for line in calls.read_text().splitlines()]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_workshop_allows_root_only_as_root_and_passes_arguments_through(tmp_path):
    *_, as_root = _workshop(tmp_path / "root", "0", "--port", "8899", "two words")
    assert as_root == [
        "lab",
        "--notebook-dir=notebooks",
        "--allow-root",
        "--port",
        "8899",
        "two words",
        "notebooks/01_text_protocol.ipynb",
    ]
    *_, as_user = _workshop(tmp_path / "user", "1000")
    assert as_user == ["lab", "--notebook-dir=notebooks", "notebooks/01_text_protocol.ipynb"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_workshop_trusts_the_shipped_notebooks_before_starting_jupyterlab(tmp_path):
    # Trusted, a stored notebook's widgets render as controls before anything runs.
    calls = _workshop(tmp_path, "1000")
    assert calls == [
        ["trust", "notebooks/01_text_protocol.ipynb", "notebooks/02_the_loop.ipynb"],
        ["lab", "--notebook-dir=notebooks", "notebooks/01_text_protocol.ipynb"],
    ]


def test_binder_builds_with_a_python_the_package_and_its_pins_accept():
    """repo2docker's default Python is older than the pins need: binder/runtime.txt names one."""
    import re
    import tomllib

    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(\d+)\.(\d+)", runtime)
    assert match, f"binder/runtime.txt should read python-X.Y, not {runtime!r}"
    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    low = tuple(int(x) for x in re.fullmatch(r">=(\d+)\.(\d+)", wanted).groups())
    assert tuple(int(x) for x in match.groups()) >= low
