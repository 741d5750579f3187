"""The wheel holds every subpackage and data file of react_lab/, imported from the wheel alone.

Binder (and any ``pip install .``) installs the wheel, not the checkout: a folder left out of
``[tool.setuptools] packages`` in pyproject.toml is simply missing there, while every test
run from the checkout still passes. So the wheel is built here (offline: ``pip wheel
--no-build-isolation`` with the environment's setuptools) and every module is imported in a
fresh interpreter that sees the unpacked wheel and the installed dependencies, but neither the
repository nor the editable install's finder (``-I -S``: no working directory, no .pth files).
"""

import json
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "react_lab"
DATA_FILES = ("*.sqlite", "*.json", "*.jsonl")


def dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def source_modules() -> list[str]:
    """Every importable module of the checkout: each package (a folder with __init__.py) and
    each .py beside it, ``__main__`` aside (importing it runs the command)."""
    packages = sorted(
        p.parent for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts
    )
    modules = [dotted(p) for p in packages]
    modules += [
        dotted(f)
        for p in packages
        for f in sorted(p.glob("*.py"))
        if f.name not in ("__init__.py", "__main__.py")
    ]
    return modules


def source_data() -> list[str]:
    """The data files the package reads at run time, as paths inside the package."""
    return sorted(
        str(f.relative_to(ROOT))
        for pattern in DATA_FILES
        for f in PACKAGE.rglob(pattern)
        if "__pycache__" not in f.parts
    )


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    """The wheel of a copy of the checkout, unzipped.

    The build's own folders stay out of the repository.
    """
    source = tmp_path_factory.mktemp("source")
    shutil.copytree(PACKAGE, source / "react_lab", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    built = tmp_path_factory.mktemp("wheel")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "--wheel-dir",
            str(built),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    (wheel,) = built.glob("react_lab-*.whl")
    target = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    return target


def test_the_wheel_holds_every_data_file(unpacked):
    shipped = sorted(
        str(f.relative_to(unpacked))
        for pattern in DATA_FILES
        for f in (unpacked / "react_lab").rglob(pattern)
    )
    assert shipped == source_data()


def test_every_module_imports_from_the_wheel_with_the_repository_off_the_path(unpacked, tmp_path):
    modules = source_modules()
    assert {
        "react_lab.lab.backends",
        "react_lab.lab.experiments",
        "react_lab.lab.notebook",
        "react_lab.lab.cli",
        "react_lab.data",
    } <= set(modules)
    # The child's whole path: the unpacked wheel first, then the dependencies (no .pth runs, so
    # the editable install's finder, which would serve the checkout, is never installed).
    path = [str(unpacked), *site.getsitepackages()]
    code = (
        "import importlib, json, sys\n"
        f"sys.path[:] = {path!r} + [p for p in sys.path if 'site-packages' not in p]\n"
        "where, missing = {}, {}\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        where[name] = importlib.import_module(name).__file__\n"
        "    except ImportError as exc:\n"
        "        missing[name] = repr(exc)\n"
        "print(json.dumps({'where': where, 'missing': missing, 'path': sys.path}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["missing"] == {}, (
        "not in the wheel (add to [tool.setuptools] packages): " + ", ".join(found["missing"])
    )
    assert not [p for p in found["path"] if Path(p).resolve() == ROOT]
    outside = {
        name: file for name, file in found["where"].items() if not file.startswith(str(unpacked))
    }
    assert outside == {}, "imported from somewhere else than the wheel"
