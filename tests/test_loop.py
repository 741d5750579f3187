"""The text loop on a scripted model: who writes what, and when it stops."""

import json

import pytest

from react_lab.lab.agent import loop
from react_lab.lab.agent.checks import check_run_arguments
from react_lab.lab.agent.loop import ask, run
from react_lab.lab.agent.trace import Transcript
from react_lab.lab.backends.base import Completion
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.cli import main
from react_lab.tools import Tool, default_tools

DUPLICATE = [
    " I should list the July invoices.\nAction: list_invoices[cus_8812, 2026-07-01]\n"
    'Observation: [{"invoice_id": "INV-9999"}]\nAnswer: forged',
    " INV-2041 is listed twice; check its charge.\nAction: get_charge[ch_1KZq8f]\n",
    " One succeeded charge.\nAnswer: Charged once; the invoice list shows a re-sent email twice.",
]


def test_loop_writes_observations_from_the_database_not_the_model():
    model = ScriptedModel(DUPLICATE)
    result = ask("Was cus_8812 charged twice for INV-2041 in July?", model, default_tools())
    assert result.stopped_by == "answer"
    assert result.answer.startswith("Charged once")
    first, second, _ = result.steps
    assert first.action == {"tool": "list_invoices", "args": ["cus_8812", "2026-07-01"]}
    assert first.observation.count('"INV-2041"') == 2  # real rows, the resend duplicate
    assert "INV-9999" not in result.transcript.text  # the forged row never enters
    assert second.action["tool"] == "get_charge" and '"succeeded"' in second.observation
    owners = [o for o, _ in result.transcript.spans]
    assert owners[:3] == ["prompt", "model", "loop"]
    for owner, text in result.transcript.spans:
        if "Observation:" in text:
            assert owner in ("prompt", "loop")  # the model never writes an observation line


def test_loop_sends_the_growing_transcript_and_the_stop_sequence():
    model = ScriptedModel(DUPLICATE)
    ask("q", model, default_tools())
    assert model.prompts[1].startswith(model.prompts[0])
    observation = [ln for ln in model.prompts[1].splitlines() if ln.startswith("Observation:")][-1]
    assert '"INV-2041"' in observation


def test_without_stop_the_forged_span_is_seen_but_dropped():
    model = ScriptedModel(DUPLICATE)
    steps = list(run("q", model, default_tools(), stop=False))
    assert steps[0].forged and "Observation:" in steps[0].completion
    assert steps[0].answer is None  # the forged "Answer:" after the Observation is not taken


def test_step_limit_and_errors_as_observations():
    model = ScriptedModel(["Thought: hmm\nAction: serch[refunds]"])
    result = ask("q", model, default_tools(), max_steps=3)
    assert result.stopped_by == "max_steps" and result.answer is None
    # Three steps ran; then the loop asked once for a best-effort answer (the script gave none).
    assert len(result.steps) == 4 and [s.number for s in result.steps] == [1, 2, 3, 4]
    assert result.steps[2].guard == result.steps[3].guard == "max_steps"
    assert result.steps[3].action is None and not result.best_effort
    assert result.steps[0].error.startswith("unknown tool 'serch'; available: list_invoices")


def test_bad_arguments_become_an_observation_naming_the_fix():
    model = ScriptedModel(["Action: list_invoices[cus_8812]", "Answer: done"])
    result = ask("q", model, default_tools())
    assert "list_invoices" in result.steps[0].observation
    assert "since" in result.steps[0].observation and result.steps[0].error


def test_transcript_keeps_each_owner_and_refuses_an_unknown_one():
    t = Transcript()
    t.add("prompt", "Question: q\n")
    t.add("model", "Thought: x\nAction: a[b]\n")
    t.add("loop", "Observation: <b>\n")
    assert [owner for owner, _ in t.spans] == ["prompt", "model", "loop"]
    with pytest.raises(ValueError):
        t.add("user", "x")


def test_cli_ask_json_on_a_scripted_model(tmp_path, capsys, shipped_db_unchanged):
    path = tmp_path / "script.json"
    path.write_text(json.dumps(DUPLICATE))
    assert (
        main(["ask", "Was cus_8812 charged twice?", "--model", f"scripted:{path}", "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["stopped_by"] == "answer" and out["answer"]
    assert {"step", "thought", "action", "observation", "error"} <= set(out["steps"][0])
    assert out["steps"][0]["action"]["tool"] == "list_invoices"
    assert out["steps"][1]["step"] == 2  # log records call a step's number "step"


def test_cli_parse(capsys, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Action: serch[x]\n")))
    assert main(["parse", "--tools", "search,calc"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "error" and "available: search, calc" in out["reason"]
    assert (
        set(out) == {"kind", "tool", "input", "answer", "reason", "forged"}
        and out["forged"] is False
    )
    monkeypatch.setattr(
        sys,
        "stdin",
        io.TextIOWrapper(
            io.BytesIO(b'Action 1: search["x"]\nObservation: INV-1 is paid\nFinal Answer: yes')
        ),
    )
    assert main(["parse", "--tools", "search,calc"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "action" and out["forged"] is True  # the invented Observation is reported


# ----------------------------------------------------------------------- arguments the loop refuses

ANSWER = " I know this.\nAnswer: 42"


class RecordingModel:
    """A backend that accepts anything, so only the loop's own check can refuse."""

    def __init__(self):
        self.calls = 0

    def complete(self, prompt, *, stop=None, max_tokens=256):
        self.calls += 1
        return Completion(ANSWER, "stop", 1, 1)


@pytest.mark.parametrize(
    "name,value",
    [
        ("max_steps", "3"),
        ("max_steps", 0),
        ("max_steps", -1),
        ("max_steps", 2.0),
        ("max_steps", True),
        ("max_tokens", 0),
        ("max_tokens", -1),
        ("max_tokens", "192"),
    ],
)
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
    check_run_arguments("chat", "q", chat, {}, 1, 1)
    with pytest.raises(TypeError, match=r"chat\(\.\.\.\) method"):
        check_run_arguments("chat", "q", RecordingModel(), {}, 1, 1)


@pytest.mark.parametrize("question", ["", " \n\t", "\u200b\u2060", "\ufeff"])
def test_both_loops_refuse_a_blank_question(question):
    from react_lab.lab.agent.native import ask_native, run_native

    model = RecordingModel()
    for call in (
        lambda: loop.ask(question, model, default_tools()),
        lambda: list(loop.run(question, model, default_tools())),
        lambda: ask_native(question, model, default_tools()),
        lambda: list(run_native(question, model, default_tools())),
    ):
        with pytest.raises((ValueError, TypeError), match="question is blank|chat"):
            call()
    assert model.calls == 0
    chat = type("Chat", (), {"chat": lambda self, *a, **k: None})()
    with pytest.raises(ValueError, match="question is blank"):
        ask_native(question, chat, default_tools())
    with pytest.raises(TypeError, match="question must be a string, got NoneType"):
        loop.ask(None, model, default_tools())


def test_every_value_of_tools_must_be_a_tool():
    from react_lab.lab.agent.native import ask_native

    model = RecordingModel()
    chat = type("Chat", (), {"chat": lambda self, *a, **k: None})()
    message = r"tools\['search'\] must be a react_lab.tools.Tool, got str 'x'"
    with pytest.raises(TypeError, match=message):
        loop.ask("q", model, {"search": "x"})
    with pytest.raises(TypeError, match=message):
        ask_native("q", chat, {"search": "x"})
    with pytest.raises(TypeError, match=r"tools\['calc'\] must be .*got function"):
        loop.ask("q", model, {**default_tools(), "calc": lambda x: x})
    assert model.calls == 0


def _tool(**changes):
    """The search tool with some fields changed (a tool a learner or a caller built badly)."""
    search = default_tools()["search"]
    fields = {
        "name": "search",
        "fn": search.fn,
        "description": "d",
        "parameters": search.parameters,
    }
    return Tool(**{**fields, **changes})


@pytest.mark.parametrize(
    "tools, words",
    [
        ({"find": _tool()}, r"tools\['find'\] is the tool 'search'"),  # the model calls it search
        ({"search": _tool(fn=5)}, r"tools\['search'\]\.fn .*callable"),
        ({"search": _tool(parameters=None)}, r"tools\['search'\]\.parameters .*properties"),
        ({"search": _tool(parameters={"type": "object"})}, r"tools\['search'\]\.parameters"),
        ({"search": _tool(parameters={"properties": []})}, r"tools\['search'\]\.parameters"),
    ],
)
def test_a_badly_built_tool_is_refused_naming_it_before_the_model_is_called(tools, words):
    from react_lab.lab.agent.native import ask_native

    model = RecordingModel()
    chat = type("Chat", (), {"chat": lambda self, *a, **k: None})()
    for call in (lambda: loop.ask("q", model, tools), lambda: ask_native("q", chat, tools)):
        with pytest.raises((TypeError, ValueError), match=words):
            call()
    assert model.calls == 0


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"guards": {}}, "guards must be a react_lab.lab.agent.guards.Guards"),
        ({"guards": "off"}, "guards must be a react_lab.lab.agent.guards.Guards"),
        ({"exemplars": "x"}, "exemplars must be"),
        ({"exemplars": ["x"]}, r"exemplars\[0\] must be a react_lab.protocol.Exemplar"),
    ],
)
def test_guards_and_exemplars_of_the_wrong_type_are_refused_naming_them(kwargs, words):
    model = RecordingModel()
    with pytest.raises(TypeError, match=words):
        loop.ask("q", model, default_tools(), **kwargs)
    assert model.calls == 0
