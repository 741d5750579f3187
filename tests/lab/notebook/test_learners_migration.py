"""Notebook 07's pieces around the learner's two loops: the turn helper, the three problems counted
from what a model said, a measured run, the diff of the learner's code, the facade's labels."""

import pytest

from react_lab import agent as solutions
from react_lab.lab.backends.base import Completion
from react_lab.lab.backends.chat import ChatReply, ScriptedChatModel, tool_call
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.experiments.migration import (
    Watched,
    completion_problems,
    counted,
    measured,
    reply_problems,
)
from react_lab.lab.experiments.migration_runs import exemplar_for, saved_results, tasks_named
from react_lab.messages import tool_messages
from react_lab.protocol import EXEMPLARS
from react_lab.tools import call_tool, default_tools
from react_lab.workshop.agent_file import _rebind
from react_lab.workshop.nb07 import calls_in, ladder_table, leaked_reply, problems_table, source_of

TOOLS = default_tools()
LEAK = '<tool_call>{"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}}</tool_call>'


# --------------------------------------------------------------------------- tool_messages


def test_tool_messages_appends_the_reply_then_one_result_per_call_keyed_to_its_id():
    reply = ChatReply(
        content=None,
        thought="Both.",
        finish_reason="tool_calls",
        tool_calls=[
            tool_call("call_1", "find_invoice", {"invoice_id": "INV-2291"}),
            tool_call("call_2", "get_payments", {"invoice_id": "INV-2291"}),
        ],
    )
    said, *results = tool_messages(reply, TOOLS)
    assert said == {"role": "assistant", "content": "Both.", "tool_calls": reply.tool_calls}
    assert [m["tool_call_id"] for m in results] == ["call_1", "call_2"]
    assert (
        results[1]["content"] == call_tool(TOOLS, "get_payments", {"invoice_id": "INV-2291"}).text
    )


def test_tool_messages_runs_a_leaked_call_and_notes_one_that_cannot_run():
    said, result = tool_messages(leaked_reply(LEAK), TOOLS)
    assert (
        said["tool_calls"][0]["id"] == result["tool_call_id"] and '"INV-2291"' in result["content"]
    )
    bad = leaked_reply('{"name": "lookup_invoice", "arguments": {"id": "INV-2291"}}')
    said, note = tool_messages(bad, TOOLS)
    assert (
        "tool_calls" not in said and note["role"] == "user" and note["content"].startswith("Error:")
    )
    assert "lookup_invoice" in note["content"]


# --------------------------------------------------------------------------- the three problems


@pytest.mark.parametrize(
    "text, expected",
    [
        (" I look.\nAction: find_invoice[INV-2291]", (0, 0, 0, 1)),
        (" I look.\nAction: find_invoice[INV-2291].", (1, 0, 0, 0)),  # the anchored regex misses it
        # the schema refuses the date
        (" I list.\nAction: list_invoices[cus_8812, July 1st]", (0, 1, 0, 1)),
        (" I look.\nAction: lookup_invoice[INV-2291]", (0, 1, 0, 1)),  # an undeclared tool
        (" I am not sure what to do next.", (0, 0, 1, 0)),  # neither a call nor an answer
        # ran on past the answer
        (" Done.\nAnswer: No.\nQuestion: Was INV-2323 paid?", (0, 0, 1, 0)),
        (" Done.\nAnswer: No.", (0, 0, 0, 0)),
        (" I look.\nAction: find_invoice[INV-2291]\nObservation: {}", (1, 0, 0, 1)),  # forged
        (" The Answer: is not clear yet.", (0, 0, 1, 0)),  # ANSWER_RE reads no answer here
    ],
)
def test_completion_problems_read_a_completion_as_the_learners_loop_does(text, expected):
    got = completion_problems(text, TOOLS)
    assert (got["unreadable"], got["invalid"], got["undone"], got["calls"]) == expected


def test_reply_problems_read_a_reply_as_the_learners_native_loop_does():
    call = ChatReply(
        content=None,
        finish_reason="tool_calls",
        tool_calls=[tool_call("c1", "find_invoice", {"invoice_id": "INV-2291"})],
    )
    bad = ChatReply(
        content=None,
        finish_reason="tool_calls",
        tool_calls=[tool_call("c1", "find_invoice", {"invoice_id": "2291"})],
    )
    cut = ChatReply(content=None, finish_reason="length")
    empty = ChatReply(content="", finish_reason="stop")
    answer = ChatReply(content="No.", finish_reason="stop")
    rows = [reply_problems(r, TOOLS) for r in (call, bad, leaked_reply(LEAK), cut, empty, answer)]
    assert [(r["unreadable"], r["invalid"], r["undone"], r["calls"]) for r in rows] == [
        (0, 0, 0, 1),
        (0, 1, 0, 1),
        (1, 0, 0, 1),
        (1, 0, 0, 0),
        (0, 0, 1, 0),
        (0, 0, 0, 0),
    ]
    assert rows[2]["leaked"] == 1


def test_watched_keeps_what_the_model_said_and_passes_it_on():
    watched = Watched(ScriptedModel([" I look.\nAction: find_invoice[INV-2291]"]))
    completion = watched.complete("prompt", stop=["Observation:"], max_tokens=128)
    assert watched.said == [completion] and isinstance(completion, Completion)
    assert watched.asked == ["prompt"]


@pytest.mark.parametrize("best_effort, undone", [(" No.", 0), (" No.\nQuestion: And INV-2323?", 1)])
def test_the_best_effort_completion_is_read_as_the_answer_the_loop_takes(best_effort, undone):
    text_loop = _rebind(solutions.run_loop_guards, vars(solutions), "run_loop")
    watched = Watched(ScriptedModel([" I look.\nAction: find_invoice[INV-2291]", best_effort]))
    answer, _ = text_loop("Has INV-2291 been paid?", watched, TOOLS, max_steps=1)
    assert answer == "[best effort] No." and watched.asked[1].endswith("Answer:")
    per_call, total = counted(watched, TOOLS)
    assert [p["undone"] for p in per_call] == [0, undone] and total["calls"] == 1
    assert (total["steps"], total["undone"]) == (2, undone)


def test_measured_runs_the_learners_two_loops_and_counts_per_model_call():
    task = tasks_named("paid_in_full-01")[0]
    text_loop = _rebind(solutions.run_loop_guards, vars(solutions), "run_loop")
    native_loop = _rebind(solutions.run_native, vars(solutions), "run_native")
    text = measured(
        text_loop,
        task,
        ScriptedModel(
            [
                " I look.\nAction: find_invoice[INV-2291].",
                " Again.\nAction: find_invoice[INV-2291]",
                " None.\nAnswer: No.",
            ]
        ),
        TOOLS,
    )
    native = measured(
        native_loop,
        task,
        ScriptedChatModel(
            [
                {"thought": "", "answer": LEAK},
                {"thought": "Approved.", "answer": "No, it is not paid."},
            ]
        ),
        TOOLS,
        [EXEMPLARS[1]],
    )
    assert (text["right"], text["steps"], text["unreadable"], text["calls"]) == (True, 3, 1, 1)
    assert (native["right"], native["steps"], native["unreadable"], native["leaked"]) == (
        True,
        2,
        1,
        1,
    )
    table = problems_table([text], [native], saved_results())
    assert "reference run_loop" in table and "1/1" in table and "file migration-test" in table
    assert "reference run_native" in table and "your" not in table  # the reference stood in
    assert "file migration-test: the reference agent's two loops, 26 questions" in table
    assert [line.split()[0] for line in table.splitlines()[-2:]] == ["run_loop", "run_native"]

    def run_loop(*args, **kwargs):  # the learner's own loop: no reference mark
        return text_loop(*args, **kwargs)

    mine = measured(run_loop, task, ScriptedModel([" None.\nAnswer: No."]), TOOLS)
    assert mine["loop"] == "your" and text["loop"] == "the reference"
    assert "your run_loop" in problems_table([mine], [native])


# -------------------------------------------------------------------------- the diff and the labels


def test_source_of_is_the_code_only_and_names_a_reference_standing_in_as_the_piece():
    standing_in = _rebind(solutions.run_loop_guards, vars(solutions), "run_loop")
    standing_in.reference = "run_loop_guards"
    lines = source_of(standing_in)
    assert lines[0].startswith("def run_loop(") and all(line.endswith("\n") for line in lines)
    assert not any('"""' in line or "#" in line.split('"')[0] for line in lines)
    # indentation kept
    assert any(line.startswith("    for _ in range(max_steps):") for line in lines)


def test_the_facade_labels_what_it_loads():
    assert "ladder-test-native_pool_k1" in ladder_table("native_pool_k1")
    assert ladder_table("pool_k1").splitlines()[1].endswith(" UTC")
    assert exemplar_for("Has supplier invoice INV-2291 been paid?")[0].question != ""
    messages = [
        {"role": "assistant", "tool_calls": [tool_call("example_1_1", "find_invoice", {})]},
        {
            "role": "assistant",
            "tool_calls": [tool_call("call_1", "get_payments", {"invoice_id": "INV-2291"})],
        },
    ]
    assert calls_in(messages) == ['get_payments({"invoice_id": "INV-2291"})']
