"""``pip install react-lab`` with no extras: ``react-lab --help``, ``ask`` and ``eval`` run.

The test environment has every extra installed, so a top-level ``import tqdm`` on the command's
path would pass every other test and still fail on a plain install. Here each command runs in a
fresh interpreter whose import system refuses the extras' libraries (a ``sys.meta_path``
finder raising ImportError for them, as a plain install's would); the libraries refused are
read from pyproject.toml's extras, so a new one is refused too. A feature that needs an extra
says which (``react-lab: error: --plot needs matplotlib, from the notebooks extra: ...``).
"""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: What each extra's requirement is imported as, and the libraries those bring that the core
#: install does not (IPython with ipywidgets, httpx with openai, pydantic with openai and mcp...).
MODULES = {
    "jupyterlab": ["jupyterlab", "jupyter_server", "notebook"],
    "ipywidgets": ["ipywidgets", "IPython", "ipykernel", "traitlets"],
    "matplotlib": ["matplotlib", "PIL"],
    "tqdm": ["tqdm"],
    "nbval": ["nbval", "nbformat", "nbclient"],
    "mcp": ["mcp", "pydantic", "starlette", "sse_starlette"],
    "anyio": ["anyio"],
    "openai": ["openai", "httpx", "pydantic"],
    "llama-cpp-python": ["fastapi", "uvicorn", "starlette", "sse_starlette", "pydantic_settings"],
}
#: Extras that are collections of the others (the tests' tools are not the package's).
NOT_LIBRARIES = {"test"}


def refused() -> list[str]:
    """The top-level modules of every extra's requirements (pyproject.toml)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names = set()
    for extra, requirements in extras.items():
        if extra in NOT_LIBRARIES:
            continue
        for requirement in requirements:
            name = requirement.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip()
            assert name in MODULES, f"the {extra} extra's {name}: add its modules to MODULES"
            names.update(MODULES[name])
    return sorted(names)


#: The child: refuse the extras, run the command, then list what was imported.
CHILD = """
import json, os, sys

REFUSED = set({refused!r})


class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in REFUSED:
            raise ImportError(f"No module named {{name!r}} (an extra, not installed)")
        return None


sys.meta_path.insert(0, Refuse())
from react_lab.lab.cli import main

try:
    code = main({argv!r})
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & REFUSED)
print("\\nLOADED " + json.dumps(loaded), file=sys.stderr)
sys.exit(code or 0)
"""


def plain(argv: list[str], tmp_path, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``react-lab ARGV`` in a fresh interpreter without the extras; return its result."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "REACT_LAB_CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT),
        "PYTHONHASHSEED": "0",
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(refused=refused(), argv=argv)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=timeout,
    )
    err, _, loaded = out.stderr.rpartition("\nLOADED ")
    assert loaded, out.stderr  # the child got as far as listing its modules
    assert json.loads(loaded) == [], f"imported an extra: {loaded}"
    return subprocess.CompletedProcess(out.args, out.returncode, out.stdout, err)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "answer.json"
    path.write_text(json.dumps([" I know this.\nAnswer: yes"]))
    return f"scripted:{path}"


def test_the_refused_libraries_cover_every_extra():
    names = refused()
    assert {"tqdm", "matplotlib", "ipywidgets", "IPython", "openai", "mcp", "fastapi"} <= set(names)


@pytest.mark.parametrize("argv", [["--help"], ["ask", "--help"], ["eval", "--help"]])
def test_help_runs_without_the_extras(tmp_path, argv):
    out = plain(argv, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "usage: react-lab" in out.stdout and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "more",
    [[], ["--agent", "reference"], ["--agent", "reference", "--no-exemplar"]],
    ids=["bench", "reference", "reference-default-exemplar"],
)
def test_ask_runs_without_the_extras(tmp_path, script, more):
    out = plain(["ask", "Was INV-2041 charged twice?", "--model", script, *more], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("answer: yes\nstopped_by: answer")


def test_ask_native_runs_without_the_extras(tmp_path):
    path = tmp_path / "replies.json"
    path.write_text(json.dumps([{"thought": "I know.", "answer": "42"}]))
    out = plain(["ask", "q?", "--protocol", "native", "--model", f"scripted:{path}"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "answer: 42" in out.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--model", "oracle", "--n", "2", "--json"],
        ["eval", "--agent", "reference", "--model", "oracle", "--n", "2", "--json"],
    ],
    ids=["bench", "reference"],
)
def test_eval_runs_without_the_extras(tmp_path, argv):
    out = plain(argv, tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["success_rate"] == 1.0


@pytest.mark.parametrize(
    "argv,says",
    [
        (
            ["cost", "--prefix", "9", "--observation", "5", "--assistant", "5", "--steps", "2"]
            + ["--plot", "cost.png"],
            "--plot needs matplotlib, from the notebooks extra: pip install 'react-lab[notebooks]'",
        ),
        (
            ["ask", "q?", "--model", "openai:some-model"],
            "needs openai, from the openai extra: pip install 'react-lab[openai]'",
        ),
        (
            ["ask", "q?", "--protocol", "native", "--model", "openai"],
            "needs openai, from the openai extra",
        ),
        (
            ["ask", "q?", "--mcp", "python -m react_lab.lab.mcp"],
            "--mcp needs mcp, from the mcp extra: pip install 'react-lab[mcp]'",
        ),
    ],
    ids=["plot", "openai", "openai-native", "mcp"],
)
def test_a_feature_of_an_extra_names_the_extra(tmp_path, argv, says):
    out = plain(argv, tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.startswith("react-lab: error: ") and says in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "cost.png").exists()


@pytest.mark.model
def test_ask_runs_on_the_embedded_model_without_the_extras(tmp_path):
    """One step on the embedded model: the plain install's own backend (a few seconds)."""
    out = plain(["ask", "What is the refund window?", "--max-steps", "1"], tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "stopped_by:" in out.stdout
