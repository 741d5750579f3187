"""Bad arguments are refused up front, with a message that names what to change.

The CLI's options (argparse ``type=`` helpers: exit code 2, ``error: argument --x``),
model and file loading (``react-lab: error: ...``, no traceback), the completion
backends' ``max_tokens``, the loop's own argument check, the scripts' small fixes.
"""
import gc
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from react_lab import forge, loop, models
from react_lab.cli import MAX_COST_STEPS, main
from react_lab.models import Completion, LocalModel, OpenAIModel, ScriptedModel
from react_lab.tools import default_tools

ROOT = Path(__file__).resolve().parents[1]
ANSWER = " I know this.\nAnswer: 42"


@pytest.fixture
def script(tmp_path):
    """A scripted model file that answers at once (so nothing slow runs if a check is missing)."""
    path = tmp_path / "answer.json"
    path.write_text(json.dumps([ANSWER]))
    return path


def usage_error(capsys, argv: list[str]) -> str:
    """Run the CLI, expect argparse's exit code 2, return stderr."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


# --------------------------------------------------------------------------- 1. max_tokens

@pytest.mark.parametrize("bad", [0, -1, "3", 2.5, True, None])
def test_scripted_model_refuses_max_tokens_below_one(bad):
    model = ScriptedModel(["one two three"])
    with pytest.raises(ValueError, match=r"max_tokens must be a whole number >= 1, got "):
        model.complete("p", max_tokens=bad)
    assert model.calls == 0 and model.prompts == []   # the refused call used up nothing
    assert model.complete("p", max_tokens=1).text == "one"


class _NoLlm:
    """Stands in for a loaded Llama; any use of it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"the model was used ({name}) despite a bad max_tokens")


@pytest.mark.parametrize("bad", [0, -1])
def test_local_model_refuses_max_tokens_below_one_before_running(bad):
    model = LocalModel("unused.gguf")
    model._llm = _NoLlm()          # llama.cpp would read 0 or -1 as "no limit"
    with pytest.raises(ValueError, match=f"max_tokens must be a whole number >= 1, got {bad}"):
        model.complete("p", max_tokens=bad)


def test_openai_model_refuses_max_tokens_below_one_before_any_request():
    model = OpenAIModel("some-model", base_url="http://127.0.0.1:9/v1", api_key="k")
    sent = []
    model.client = type("Client", (), {"completions": type("C", (), {
        "create": staticmethod(lambda **kw: sent.append(kw))})()})()
    with pytest.raises(ValueError, match="max_tokens must be a whole number >= 1, got 0"):
        model.complete("p", max_tokens=0)
    assert sent == []


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5"])
def test_cli_refuses_max_tokens_below_one(capsys, script, value):
    err = usage_error(capsys, ["ask", "q", "--model", f"scripted:{script}", "--max-tokens", value])
    assert "react-lab ask: error: argument --max-tokens:" in err


# --------------------------------------------------------------------------- 2. option values

ASK_BAD = [
    ("--max-steps", "0"), ("--max-steps", "-5"), ("--max-steps", "two"),
    ("--tool-timeout", "-1"), ("--tool-timeout", "nan"), ("--tool-timeout", "inf"),
    ("--time-budget", "nan"), ("--time-budget", "-1"),
    ("--token-budget", "-1"), ("--token-budget", "1e3"),
    ("--price-in", "-5"), ("--price-out", "nan"),
    ("--money-budget", "-0.5"), ("--money-budget", "nan"), ("--money-budget", "x"),
]


@pytest.mark.parametrize("option,value", ASK_BAD)
def test_ask_refuses_nonsense_option_values(capsys, script, option, value):
    err = usage_error(capsys, ["ask", "q", "--model", f"scripted:{script}", option, value])
    assert f"react-lab ask: error: argument {option}:" in err


def test_guard_limit_errors_say_that_zero_switches_a_limit_off(capsys, script):
    err = usage_error(capsys, ["ask", "q", "--model", f"scripted:{script}", "--time-budget", "nan"])
    assert "finite number >= 0 (0 switches the limit off), got nan" in err


def test_ask_still_accepts_zero_to_switch_limits_off(capsys, script):
    assert main(["ask", "q", "--model", f"scripted:{script}", "--json", "--max-steps", "1",
                 "--time-budget", "0", "--tool-timeout", "0", "--token-budget", "0",
                 "--money-budget", "0", "--price-in", "0", "--price-out", "2.5"]) == 0
    assert json.loads(capsys.readouterr().out)["answer"] == "42"


COST = ["cost", "--prefix", "10", "--observation", "5", "--assistant", "5"]


@pytest.mark.parametrize("steps", ["0", "-3", str(MAX_COST_STEPS + 1), "10000000"])
def test_cost_refuses_steps_out_of_range(capsys, steps):
    err = usage_error(capsys, COST + ["--steps", steps, "--json"])
    assert f"argument --steps: must be a whole number from 1 to {MAX_COST_STEPS}" in err


def test_cost_takes_the_largest_allowed_run(capsys):
    assert main(COST + ["--steps", str(MAX_COST_STEPS), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["per_step"]) == MAX_COST_STEPS


@pytest.mark.parametrize("argv,option", [
    (["eval", "--n", "0", "--model", "oracle"], "--n"),
    (["eval", "--n", "-2", "--model", "oracle"], "--n"),
    (["forge-rate", "--n", "0", "--model", "oracle"], "--n"),
    (["forge-rate", "--n", "ten"], "--n"),
])
def test_eval_and_forge_rate_refuse_bad_counts(capsys, argv, option):
    err = usage_error(capsys, argv)
    assert f"react-lab {argv[0]}: error: argument {option}:" in err


# --------------------------------------------------------------------------- 3. loading

def test_scripted_from_json_says_what_the_file_must_hold(tmp_path):
    path = tmp_path / "dict.json"
    path.write_text(json.dumps({"x": 1}))
    with pytest.raises(ValueError, match=r'dict\.json: expected a JSON list of strings, one '
                                         r'completion per call, or \{"completions": \[\.\.\.\]\}'):
        ScriptedModel.from_json(path)


@pytest.mark.parametrize("content", ["[]", '{"completions": []}', "[1, 2]", '"text"', "{not json"])
def test_scripted_from_json_refuses_other_shapes_with_value_error(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="list of strings, one completion per call"):
        ScriptedModel.from_json(path)


def test_scripted_from_json_accepts_both_shapes(tmp_path):
    for data in (["a"], {"completions": ["a"]}):
        path = tmp_path / "ok.json"
        path.write_text(json.dumps(data))
        assert ScriptedModel.from_json(path).completions == ["a"]


def test_load_model_refuses_a_missing_file_name():
    with pytest.raises(ValueError, match="scripted: needs a file name: scripted:FILE.json"):
        models.load_model("scripted:")


def test_load_model_refuses_a_directory_with_a_readable_message(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory; a scripted model needs a file"):
        models.load_model(f"scripted:{tmp_path}")


@pytest.mark.parametrize("make_spec,says", [
    (lambda d: f"scripted:{d / 'dict.json'}", '{"completions": [...]}'),
    (lambda d: "scripted:", "scripted: needs a file name"),
    (lambda d: f"scripted:{d}", "is a directory"),
    (lambda d: f"scripted:{d / 'missing.json'}", "No such file"),
    (lambda d: "nonsense", "unknown model 'nonsense'"),
])
def test_cli_turns_load_errors_into_one_line(tmp_path, capsys, make_spec, says):
    (tmp_path / "dict.json").write_text(json.dumps({"x": 1}))
    assert main(["ask", "q", "--model", make_spec(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("react-lab: error: ") and says in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_cli_turns_a_directory_for_the_native_protocol_into_one_line(tmp_path, capsys):
    pytest.importorskip("react_lab.native")
    assert main(["ask", "q", "--protocol", "native", "--model", f"scripted:{tmp_path}"]) == 2
    assert capsys.readouterr().err.startswith("react-lab: error: ")


def test_cli_turns_permission_errors_into_one_line(monkeypatch, capsys):
    def unreadable(path):
        raise PermissionError(f"[Errno 13] Permission denied: {path!r}")

    monkeypatch.setattr(ScriptedModel, "from_json", unreadable)
    assert main(["ask", "q", "--model", "scripted:locked.json"]) == 2
    err = capsys.readouterr().err
    assert err == "react-lab: error: [Errno 13] Permission denied: 'locked.json'\n"


def test_cli_keeps_tracebacks_for_unexpected_errors(monkeypatch):
    def broken(spec):
        raise RuntimeError("a bug")

    monkeypatch.setattr(models, "load_model", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["ask", "q"])


# --------------------------------------------------------------------------- 4. --no-stop

def test_no_stop_with_the_native_protocol_is_a_usage_error(capsys, script):
    err = usage_error(capsys, ["ask", "q", "--protocol", "native", "--no-stop",
                               "--model", f"scripted:{script}"])
    assert "react-lab ask: error: argument --no-stop: the native protocol sends no stop" in err


def test_no_stop_with_the_text_protocol_still_runs(capsys, script):
    assert main(["ask", "q", "--no-stop", "--model", f"scripted:{script}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stopped_by"] == "answer"


# --------------------------------------------------------------------------- 5. loop.run

class RecordingModel:
    """A backend that accepts anything, so only the loop's own check can refuse."""

    def __init__(self):
        self.calls = 0

    def complete(self, prompt, *, stop=None, max_tokens=256):
        self.calls += 1
        return Completion(ANSWER, "stop", 1, 1)


@pytest.mark.parametrize("name,value", [
    ("max_steps", "3"), ("max_steps", 0), ("max_steps", -1), ("max_steps", 2.0),
    ("max_steps", True),
    ("max_tokens", 0), ("max_tokens", -1), ("max_tokens", "192"),
])
def test_run_refuses_bad_counts_before_calling_the_model(name, value):
    model = RecordingModel()
    with pytest.raises(ValueError, match=f"{name} must be a whole number >= 1, got {value!r}"):
        list(loop.run("q", model, default_tools(), **{name: value}))
    assert model.calls == 0


def test_ask_refuses_zero_steps_instead_of_returning_an_empty_run():
    with pytest.raises(ValueError, match="max_steps"):
        loop.ask("q", RecordingModel(), default_tools(), max_steps=0)


def test_run_says_what_a_model_must_be():
    with pytest.raises(TypeError, match=r"complete\(\.\.\.\) method, got str 'local'.*load_model"):
        list(loop.run("q", "local", default_tools()))
    with pytest.raises(TypeError, match="got object"):
        list(loop.run("q", object(), default_tools()))


def test_run_says_what_tools_must_be():
    tools = list(default_tools().values())
    with pytest.raises(TypeError, match=r"dict of tool name -> Tool.*got list.*\{t\.name: t"):
        list(loop.run("q", RecordingModel(), tools))


def test_run_still_runs_with_good_arguments():
    steps = list(loop.run("q", RecordingModel(), default_tools(), max_steps=1, max_tokens=1))
    assert [s.answer for s in steps] == ["42"]


def test_check_run_arguments_serves_a_chat_loop_too():
    chat = type("Chat", (), {"chat": lambda self, *a, **k: None})()
    loop.check_run_arguments("chat", chat, {}, 1, 1)
    with pytest.raises(TypeError, match=r"chat\(\.\.\.\) method"):
        loop.check_run_arguments("chat", RecordingModel(), {}, 1, 1)


# --------------------------------------------------------------------------- 6. help, progress

def test_eval_help_names_the_scripted_baselines(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    out = capsys.readouterr().out
    assert "oracle" in out and "dont_know" in out and "100%" in out and "0%" in out


def test_top_level_help_names_the_scripted_baselines(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "oracle" in out and "dont_know" in out


def test_forge_rate_help_explains_model(capsys):
    with pytest.raises(SystemExit):
        main(["forge-rate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--model MODEL local (the embedded SmolLM2" in out and "scripted:FILE.json" in out


def test_forge_rate_json_shows_no_progress_bar(tmp_path, monkeypatch, capsys, script):
    monkeypatch.setenv(forge.CACHE_ENV, str(tmp_path / "cache"))
    assert main(["forge-rate", "--n", "2", "--model", f"scripted:{script}", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["n"] == 2
    assert captured.err == ""


# --------------------------------------------------------------------------- 7-9. scripts, teardown

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
    for path, body in ((root / ".venv" / "bin" / "jupyter",
                        f'(IFS="$(printf \'\\t\')"; echo "$*") >> {calls}'),
                       (stubs / "id", f'echo {uid}')):
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}"}
    subprocess.run(["bash", str(root / "scripts" / "workshop.sh"), *args], env=env,
                   capture_output=True, text=True, check=True)
    return [line.split("\t") for line in calls.read_text().splitlines()]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_workshop_allows_root_only_as_root_and_passes_arguments_through(tmp_path):
    *_, as_root = _workshop(tmp_path / "root", "0", "--port", "8899", "two words")
    assert as_root == ["lab", "--notebook-dir=notebooks", "--allow-root", "--port", "8899",
                       "two words", "notebooks/01_text_protocol.ipynb"]
    *_, as_user = _workshop(tmp_path / "user", "1000")
    assert as_user == ["lab", "--notebook-dir=notebooks", "notebooks/01_text_protocol.ipynb"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_workshop_trusts_the_shipped_notebooks_before_starting_jupyterlab(tmp_path):
    # Trusted, a stored notebook's widgets render as controls before anything runs.
    calls = _workshop(tmp_path, "1000")
    assert calls == [["trust", "notebooks/01_text_protocol.ipynb", "notebooks/02_the_loop.ipynb"],
                     ["lab", "--notebook-dir=notebooks", "notebooks/01_text_protocol.ipynb"]]


def test_default_threads_says_what_to_set(monkeypatch):
    monkeypatch.setenv("REACT_LAB_THREADS", "two")
    with pytest.raises(ValueError, match="REACT_LAB_THREADS='two' is not a whole number"):
        models.default_threads()
    monkeypatch.setenv("REACT_LAB_THREADS", "3")
    assert models.default_threads() == 3


class _FakeLlama:
    closed = 0

    def __init__(self, **kwargs):
        pass

    def close(self):
        _FakeLlama.closed += 1


def test_a_loaded_model_is_closed_at_exit_and_close_frees_it(monkeypatch):
    llama_cpp = pytest.importorskip("llama_cpp")
    hooks = []
    monkeypatch.setattr(llama_cpp, "Llama", _FakeLlama)
    monkeypatch.setattr(models.atexit, "register", lambda fn, *args: hooks.append((fn, args)))
    _FakeLlama.closed = 0
    model = LocalModel("unused.gguf", n_threads=1)
    assert hooks == []                              # nothing loaded, nothing to close
    assert isinstance(model.llm, _FakeLlama) and len(hooks) == 1
    fn, args = hooks[0]
    fn(*args)                                       # what the interpreter does at exit
    assert _FakeLlama.closed == 1 and model._llm is None
    fn(*args)                                       # closing twice is harmless
    assert _FakeLlama.closed == 1
    model.llm                                       # loads again after close
    del model
    gc.collect()
    fn(*args)                                       # a collected model is skipped
    assert _FakeLlama.closed == 1
