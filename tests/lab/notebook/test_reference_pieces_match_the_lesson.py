"""The reference pieces, composed by load_agent, do what the lesson's loops do where both overlap.

Same scripted completions in, the same tool calls, observations and answer out:
the reference ``run_loop`` (notebook 03's) against ``react_lab.lab.agent.loop.ask`` with every guard
off; notebook 06's against ``ask`` with only the repeat guard and the best effort on;
``run_native`` against ``react_lab.lab.agent.native.ask_native`` with the guards off. Only the
lesson's public surface is used (``ask``, ``ask_native``, ``Guards.off`` with its ``repeats``
and ``best_effort`` switches, ``RunResult.answer``, ``.steps[i].action`` and ``.observation``),
so the lesson's inner refactors do not break it.

Where they do not overlap: the lesson's tolerant parser words a missing action or an
unknown tool its own way (the learner's ``observe`` uses ``call_tool``'s wording); a
completion with an action *and* an answer is an answer to the learner's loop (notebook 02's
rule 3, the classic loop's ``"Answer:" in text`` first) but an action to the lesson's parser;
and the lesson's text loop runs a call with a malformed argument that the learner's
notebook-04 ``observe`` refuses (the lesson's schema check is the native loop's).
"""

import json

import pytest

from react_lab.lab.agent.guards import Guards
from react_lab.lab.agent.loop import ask
from react_lab.lab.agent.native import ask_native
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.protocol import ACTION_RE, EXEMPLARS
from react_lab.tools import default_tools
from react_lab.workshop.agent_file import load_agent

QUESTION = "Has supplier invoice INV-2291 been paid?"
INVOICE = " The invoice.\nAction: find_invoice[INV-2291]"
PAYMENTS = " Payments.\nAction: get_payments[INV-2291]"

TEXT_RUNS = {
    "invoice then payments": [
        " I look at the invoice.\nAction: find_invoice[INV-2291]",
        " Now its payments.\nAction: get_payments[INV-2291]",
        " None.\nAnswer: No, INV-2291 is not paid.",
    ],
    "two arguments, spaced": [
        " The July invoices.\nAction: list_invoices[ cus_8812 ,2026-07-01 ]",
        " Two.\nAnswer: two invoices",
    ],
    "a tool's own error": [
        " I list them.\nAction: list_invoices[cus_8812]",
        " With a date.\nAction: list_invoices[cus_8812, 2026-07-01]",
        " Done.\nAnswer: two",
    ],
    "search, then a charge": [
        " The policy.\nAction: search[refund policy]",
        " The charge.\nAction: get_charge[ch_1KZq8f]",
        " It succeeded.\nAnswer: 60 days",
    ],
    "the step limit": [
        INVOICE,
        PAYMENTS,
        " The charge.\nAction: get_charge[ch_1KZq8f]",
        " More.\nAction: search[duplicate charge]",
    ],
}


def steps_of_reference(model: ScriptedModel) -> list[tuple[dict | None, str | None]]:
    """(action, observation) per step of a reference text run, read from what the model was sent."""
    steps = []
    for before, after in zip(model.prompts, model.prompts[1:]):
        written = after[len(before) :]
        match = ACTION_RE.search(written)
        observation = written.split("\nObservation: ", 1)[1].split("\nThought:")[0]
        steps.append((action_of(match), observation))
    return steps


@pytest.fixture
def no_file(tmp_path, monkeypatch, capsys):
    """No my_agent.py: load_agent composes the references alone."""
    monkeypatch.setenv("REACT_LAB_AGENT_FILE", str(tmp_path / "my_agent.py"))
    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    yield
    capsys.readouterr()


@pytest.mark.parametrize("run", list(TEXT_RUNS))
def test_the_reference_loop_matches_the_lesson_loop_with_its_guards_off(no_file, run):
    script, tools = TEXT_RUNS[run], default_tools()
    agent = load_agent(4)  # observe (01) and run_loop with stop (03)
    mine = ScriptedModel(script)
    answer, transcript = agent.run_loop(QUESTION, mine, tools, max_steps=4)
    lesson = ask(QUESTION, ScriptedModel(script), tools, guards=Guards.off(), max_steps=4)

    assert answer == lesson.answer
    ran = steps_of_reference(mine) + ([] if answer is not None else [_last_step(mine, transcript)])
    lessons = [(s.action, s.observation) for s in lesson.steps if s.action]
    assert lessons == [s for s in ran if s[0]] != []


def _last_step(model, transcript):
    """The last step of a run that hit its limit: its observation is in the returned transcript."""
    written = transcript[len(model.prompts[-1]) :]
    match = ACTION_RE.search(written)
    observation = written.split("\nObservation: ", 1)[1].removesuffix("\nThought:")
    return action_of(match), observation


def action_of(match) -> dict | None:
    """A step's action as the lesson's loop records it, from the action line the regex matched."""
    if match is None:
        return None
    return {"tool": match.group(1), "args": [a.strip() for a in match.group(2).split(",")]}


GUARDED_RUNS = {
    "a repeat, then an answer": [
        " The invoice.\nAction: find_invoice[INV-2291]",
        " Again.\nAction: find_invoice[INV-2291]",
        " None.\nAnswer: No.",
    ],
    "a repeat, then the limit and a best effort": [
        " The invoice.\nAction: find_invoice[INV-2291]",
        " Again.\nAction: find_invoice[INV-2291]",
        PAYMENTS,
        " It has no payments, so it is not paid.\nThought: done",
    ],
}


@pytest.mark.parametrize("run", list(GUARDED_RUNS))
def test_the_guarded_reference_loop_matches_the_lesson_with_the_same_two_guards(no_file, run):
    script, tools = GUARDED_RUNS[run], default_tools()
    agent = load_agent(7)  # notebook 06's run_loop: repeats refused, a best effort at the limit
    mine = ScriptedModel(script)
    answer, transcript = agent.run_loop(QUESTION, mine, tools, max_steps=3)
    lesson = ask(
        QUESTION,
        ScriptedModel(script),
        tools,
        max_steps=3,
        guards=Guards.off(repeats=True, best_effort=True),
    )

    assert answer == lesson.answer
    assert answer.startswith("[best effort] ") == run.endswith("a best effort")
    assert mine.calls == len(lesson.steps)  # the same model calls: steps, and the best effort's
    ran = steps_of_reference(mine)
    lesson_steps = [s for s in lesson.steps if s.action]
    assert [s.action for s in lesson_steps][: len(ran)] == [a for a, _ in ran]
    repeats = 0
    for number, (step, (action, observation)) in enumerate(zip(lesson_steps, ran)):
        repeat = action in [a for a, _ in ran[:number]]  # the same tool, the same arguments
        repeats += repeat
        if repeat:  # refused by both, in their own words: nothing ran
            assert observation.startswith("Error: that call already ran")
            assert step.observation.startswith("Error:")
        else:
            assert observation == step.observation
    assert repeats == 1


FIND = {"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}}
PAY = {"name": "get_payments", "arguments": {"invoice_id": "INV-2291"}}
NATIVE_RUNS = {
    "two calls, then the answer": [
        {"thought": "The invoice.", "tool_calls": [FIND]},
        {"thought": "Payments.", "tool_calls": [PAY]},
        {"thought": "None.", "answer": "No, INV-2291 is not paid."},
    ],
    "two calls in one reply": [
        {"thought": "Both.", "tool_calls": [FIND, PAY]},
        {"thought": "None.", "answer": "No."},
    ],
    "a leaked call that runs": [
        {"thought": "", "answer": f"<tool_call>{json.dumps(FIND)}</tool_call>"},
        {"thought": "Approved.", "answer": "It is approved, not paid."},
    ],
    "a leaked call that cannot run": [
        {"thought": "", "answer": '{"name": "lookup_invoice", "arguments": {"id": "INV-2291"}}'},
        {"thought": "So.", "answer": "I do not know."},
    ],
    "the step limit": [{"thought": "The invoice.", "tool_calls": [FIND]}],
}


@pytest.mark.parametrize("run", list(NATIVE_RUNS))
def test_the_reference_native_loop_matches_the_lesson_with_its_guards_off(no_file, run):
    replies, tools = NATIVE_RUNS[run], default_tools()
    agent = load_agent(8)
    mine, theirs = ScriptedChatModel(replies), ScriptedChatModel(replies)
    shown = [EXEMPLARS[1]]
    answer, messages = agent.run_native(QUESTION, mine, tools, exemplars=shown, max_steps=3)
    lesson = ask_native(QUESTION, theirs, tools, guards=Guards.off(), exemplars=shown, max_steps=3)

    assert answer == lesson.answer
    assert mine.requests[0] == theirs.requests[0]  # the same first request: messages, schemas
    assert len(mine.requests) == len(theirs.requests)
    assert turns(messages[len(mine.requests[0][0]) :]) == [
        (s.action and s.action["tool"], s.action and s.action["args"], s.observation)
        for s in lesson.steps
        if s.observation is not None
    ]


def turns(messages: list[dict]) -> list[tuple]:
    """(first call's tool, its arguments, what the loop wrote back) per reply the loop answered."""
    out = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        following = []
        for after in messages[i + 1 :]:
            if after["role"] == "assistant":
                break
            following.append(after["content"])
        if not following:
            continue
        calls = message.get("tool_calls") or [{"function": {"name": None, "arguments": "null"}}]
        first = calls[0]["function"]
        out.append((first["name"], json.loads(first["arguments"]), "\n".join(following)))
    return out
