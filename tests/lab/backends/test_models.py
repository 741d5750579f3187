"""The completion backends.

Stop sequences as providers apply them, argument checks, loading, teardown.
"""

import gc
import json

import pytest

import react_lab.lab.backends.local as local_module
from react_lab.lab.backends.base import apply_stop
from react_lab.lab.backends.endpoints import OpenAIModel
from react_lab.lab.backends.load import load_model
from react_lab.lab.backends.local import LocalModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.backends.threads import default_threads
from react_lab.protocol import STOP


@pytest.mark.parametrize(
    "stop,text,expected,hit",
    [
        (["Observation:"], "a\nObservation: b", "a\n", True),
        (["\nObs", "Obs"], "xx Obs\nObs", "xx ", True),  # the earliest stop string wins
        (None, "a\nObservation: b", "a\nObservation: b", False),
        (["zzz"], "abc", "abc", False),
    ],
)
def test_apply_stop_like_a_provider(stop, text, expected, hit):
    assert apply_stop(text, stop) == (expected, hit)


def test_scripted_model_cuts_at_stop_and_reports_finish_reason():
    model = ScriptedModel(["Action: a[b]\nObservation: fake"])
    c = model.complete("p", stop=STOP)
    assert c.text == "Action: a[b]" and c.finish_reason == "stop"
    assert "Observation" not in c.text
    assert model.complete("p", stop=None).text.endswith("Observation: fake")
    assert model.complete("p", max_tokens=2).finish_reason == "length"


# --------------------------------------------------------------------------- max_tokens


@pytest.mark.parametrize("bad", [0, -1, "3", 2.5, True, None])
def test_scripted_model_refuses_max_tokens_below_one(bad):
    model = ScriptedModel(["one two three"])
    with pytest.raises(ValueError, match=r"max_tokens must be a whole number >= 1, got "):
        model.complete("p", max_tokens=bad)
    assert model.calls == 0 and model.prompts == []  # the refused call used up nothing
    assert model.complete("p", max_tokens=1).text == "one"


class _NoLlm:
    """Stands in for a loaded Llama; any use of it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"the model was used ({name}) despite a bad max_tokens")


@pytest.mark.parametrize("bad", [0, -1])
def test_local_model_refuses_max_tokens_below_one_before_running(bad):
    model = LocalModel("unused.gguf")
    model._llm = _NoLlm()  # llama.cpp would read 0 or -1 as "no limit"
    with pytest.raises(ValueError, match=f"max_tokens must be a whole number >= 1, got {bad}"):
        model.complete("p", max_tokens=bad)


def test_openai_model_refuses_max_tokens_below_one_before_any_request():
    model = OpenAIModel("some-model", base_url="http://127.0.0.1:9/v1", api_key="k")
    sent = []
    model.client = type(
        "Client",
        (),
        {"completions": type("C", (), {"create": staticmethod(lambda **kw: sent.append(kw))})()},
    )()
    with pytest.raises(ValueError, match="max_tokens must be a whole number >= 1, got 0"):
        model.complete("p", max_tokens=0)
    assert sent == []


# --------------------------------------------------------------------------- loading


def test_scripted_from_json_says_what_the_file_must_hold(tmp_path):
    path = tmp_path / "dict.json"
    path.write_text(json.dumps({"x": 1}))
    with pytest.raises(
        ValueError,
        match=r"dict\.json: expected a JSON list of strings, one "
        r'completion per call, or \{"completions": \[\.\.\.\]\}',
    ):
        ScriptedModel.from_json(path)


@pytest.mark.parametrize(
    "content",
    ["[]", '{"completions": []}', "[1, 2]", '{"completions": [1, 2]}', '"text"', "{not json"],
)
def test_scripted_from_json_refuses_other_shapes_with_value_error(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="list of strings, one completion per call"):
        ScriptedModel.from_json(path)


def test_scripted_from_json_accepts_both_shapes(tmp_path):
    for data in (["Answer: 1"], {"completions": ["Answer: 1"]}):
        path = tmp_path / "ok.json"
        path.write_text(json.dumps(data))
        model = ScriptedModel.from_json(path)
        assert model.completions == ["Answer: 1"] and model.complete("q").text == "Answer: 1"


def test_load_model_refuses_a_missing_file_name():
    with pytest.raises(ValueError, match="scripted: needs a file name: scripted:FILE.json"):
        load_model("scripted:")


def test_load_model_refuses_a_directory_with_a_readable_message(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory; a scripted model needs a file"):
        load_model(f"scripted:{tmp_path}")


# --------------------------------------------------------------------------- threads, teardown


def test_default_threads_says_what_to_set(monkeypatch):
    monkeypatch.setenv("REACT_LAB_THREADS", "two")
    with pytest.raises(ValueError, match="REACT_LAB_THREADS='two' is not a whole number"):
        default_threads()
    monkeypatch.setenv("REACT_LAB_THREADS", "3")
    assert default_threads() == 3


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
    monkeypatch.setattr(local_module.atexit, "register", lambda fn, *args: hooks.append((fn, args)))
    _FakeLlama.closed = 0
    model = LocalModel("unused.gguf", n_threads=1)
    assert hooks == []  # nothing loaded, nothing to close
    assert isinstance(model.llm, _FakeLlama) and len(hooks) == 1
    fn, args = hooks[0]
    fn(*args)  # what the interpreter does at exit
    assert _FakeLlama.closed == 1 and model._llm is None
    fn(*args)  # closing twice is harmless
    assert _FakeLlama.closed == 1
    model.llm  # loads again after close
    del model
    gc.collect()
    fn(*args)  # a collected model is skipped
    assert _FakeLlama.closed == 1
