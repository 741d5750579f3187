"""Reasoning blocks (``<think>...</think>``, Harmony's analysis channel) are set aside before the
labels are read, in both loops: a draft inside them never runs and never answers, the step keeps
it in ``reasoning``, and a call written outside them is still a call.
"""

import pytest

from react_lab._parsing.reasoning import set_aside_reasoning
from react_lab.data import load_cases
from react_lab.lab.agent.loop import ask
from react_lab.lab.agent.native import ask_native
from react_lab.lab.agent.parser import parse
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.tools import default_tools

TOOLS = default_tools()
QUESTION = "Was cus_8812 charged twice for INV-2041 in July?"


@pytest.mark.parametrize(
    "text,kind,value,draft",
    [
        (
            "<think>\nAction: search[foo]\n</think>\nFinal Answer: 42",
            "final",
            "42",
            "Action: search[foo]",
        ),
        (
            "<think>\nFinal Answer: 41\n</think>\nAction: search[refunds]",
            "action",
            ("search", "refunds"),
            "Final Answer: 41",
        ),
        (
            "I should search.\nAction: search[foo]\n</think>\nAnswer: 42",
            "final",
            "42",
            "Action: search[foo]",
        ),
        ("[THINK]Answer: 41[/THINK]\nAnswer: 42", "final", "42", "Answer: 41"),
        ("<seed:think>Action: calc[1+1]</seed:think>Answer: 2", "final", "2", "Action: calc[1+1]"),
        ("<thinking>\nAnswer: 41\n</thinking>\nAnswer: 42", "final", "42", "Answer: 41"),
        (
            "<|channel|>analysis<|message|>Thinking.\nAction: search[x]<|end|>\nAnswer: 42",
            "final",
            "42",
            "Action: search[x]",
        ),
        (
            "<|channel|>analysis<|message|>Easy.<|end|>"
            "<|start|>assistant<|channel|>final<|message|>12 C.<|return|>",
            "final",
            "12 C.",
            "Easy.",
        ),
    ],
)
def test_a_draft_in_reasoning_is_never_the_action_or_the_answer(text, kind, value, draft):
    r = parse(text, tools=list(TOOLS))
    assert r.kind == kind, r
    assert (r.tool, r.input) == value if kind == "action" else r.answer == value
    assert draft in r.reasoning
    assert "</think>" not in (r.answer or "") and "<think>" not in r.kept


@pytest.mark.parametrize(
    "text,words",
    [
        (
            "<think>\nAction: search[foo]\n</think>",
            ["only a reasoning block (<think>...</think>)", "nothing in reasoning is run"],
        ),
        ("<think>I will search. Action: search[foo]", ["opened with <think> and never closed"]),
        ("<|channel|>analysis<|message|>Answer: 42<|end|>", ["Harmony", "analysis channel"]),
        (
            "<think>Action: search[foo]</think>\nI am still thinking about it.",
            ["outside a reasoning block (<think>...</think>)"],
        ),
    ],
)
def test_reasoning_with_nothing_after_it_is_refused_naming_it(text, words):
    r = parse(text, tools=list(TOOLS))
    assert r.kind == "error" and "\n" not in r.reason, r
    assert all(w in r.reason for w in words), r.reason
    assert r.reasoning


def test_a_call_section_outside_reasoning_is_a_call():
    kimi = next(
        c for c in load_cases("parse") if c["id"].startswith("kimi-k2-call-section-in-reasoning")
    )
    r = parse(kimi["model_output"], tools=kimi["tools"])
    assert (r.kind, r.tool) == ("action", "bash") and r.reasoning is None
    # inside a reasoning block, the same section is a draft
    r = parse(f"<think>{kimi['model_output']}</think>\nAnswer: nothing to run", tools=kimi["tools"])
    assert (r.kind, r.answer) == (
        "final",
        "nothing to run",
    ) and "tool_calls_section_begin" in r.reasoning


def test_set_aside_reasoning_keeps_text_without_reasoning_unchanged():
    for text in ["Thought: a\nAction: search[x]", "I think <b>so</b>", "", "Answer: 42"]:
        assert set_aside_reasoning(text) == (text, None, None)


def test_the_text_loop_keeps_the_draft_in_the_step_and_never_runs_it():
    model = ScriptedModel(
        ["<think>\nAction: get_payments[INV-2041]\n</think>\nAnswer: INV-2041 was paid once."]
    )
    result = ask(QUESTION, model, TOOLS)
    (step,) = result.steps
    assert step.action is None and step.answer == "INV-2041 was paid once."
    assert step.reasoning == "Action: get_payments[INV-2041]"
    assert "reasoning" in step.to_dict()


def test_the_text_loop_refuses_reasoning_alone_and_sends_the_refusal_back():
    model = ScriptedModel(["<think>\nAction: get_payments[INV-2041]", " Answer: paid once."])
    result = ask(QUESTION, model, TOOLS, max_steps=2)
    first = result.steps[0]
    assert first.action is None and first.answer is None and "never closed" in first.error
    assert f"Observation: {first.error}" in model.prompts[1]


def test_the_text_loops_best_effort_sets_reasoning_aside_and_refuses_markup():
    model = ScriptedModel(["Action: calc[1+1]", "<think>one payment</think> Paid once."])
    result = ask(QUESTION, model, TOOLS, max_steps=1)
    assert (
        result.answer == "[best effort] Paid once." and result.steps[-1].reasoning == "one payment"
    )
    model = ScriptedModel(
        ["Action: calc[1+1]", '<tool_call>{"name": "create_file", "arguments": {}}</tool_call>']
    )
    result = ask(QUESTION, model, TOOLS, max_steps=1)
    assert result.answer is None
    assert (
        "it wrote a Hermes tool call to create_file, a tool this agent does not have"
        in result.steps[-1].error
    )


def test_the_native_loop_keeps_the_draft_in_the_step():
    model = ScriptedChatModel(
        [{"thought": "", "answer": "<think>Maybe twice?</think>\nNo, it was paid once."}]
    )
    result = ask_native(QUESTION, model, TOOLS)
    (step,) = result.steps
    assert step.answer == "No, it was paid once." and step.reasoning == "Maybe twice?"


def test_an_opener_never_closed_mid_line_is_text_and_at_a_line_start_a_block():
    from react_lab._parsing.reasoning import set_aside_reasoning

    value = "<a_a><a>[THINK]</a></a_a>"  # an argument's value, in a call written as elements
    assert set_aside_reasoning(value) == (value, None, None)
    kept, draft, what = set_aside_reasoning("Action: x[1]\n[THINK] still going")
    assert (kept, draft) == ("Action: x[1]\n", "still going")
    assert what == "a reasoning block opened with [THINK] and never closed"
