"""Compaction (:mod:`react_lab.lab.agent.context`): older steps summarised once a run passes
``compact_at``.

The text loop's transcript (:func:`react_lab.lab.agent.context.compact_transcript`), the native
loop's messages (:func:`react_lab.lab.agent.context.compact_messages`), and the summaries
themselves: which one keeps the id a later step needs.
"""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from react_lab.lab.agent.context import COMPACTED, compact, keep_ids_summary
from react_lab.lab.agent.guards import Guards
from react_lab.lab.agent.loop import ask
from react_lab.lab.agent.native import run_native
from react_lab.lab.agent.trace import Transcript
from react_lab.lab.backends.base import Completion
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.guards import naive_summary
from react_lab.tools import ID_RE

# --------------------------------------------------------------------------- the text loop


class CopyingModel:
    """A scripted model that can only copy ids it sees: each script entry is ``prompt -> text``."""

    def __init__(self, script):
        self.script, self.calls = script, 0

    def complete(self, prompt, *, stop=None, max_tokens=256):
        text = self.script[min(self.calls, len(self.script) - 1)](prompt)
        self.calls += 1
        return Completion(text, "stop", len(prompt.split()), len(text.split()))


def charge_for(prompt: str, invoice: str) -> str:
    """The first charge id after ``invoice`` in the run so far, or a made-up one."""
    after_question = prompt[prompt.rfind("\nQuestion:") :].split("\n", 2)[-1]
    found = re.search(invoice + r"\b.{0,250}?\b(ch_[A-Za-z0-9]+)", after_question, re.S)
    return found.group(1) if found else "ch_" + invoice[-4:]


HAZARD = [
    lambda p: " First all invoices of cus_8812.\nAction: list_invoices[cus_8812, 2026-01-01]",
    lambda p: " What do the refund rules say?\nAction: search[refund policy]",
    lambda p: f" Now the March charge.\nAction: get_charge[{charge_for(p, 'INV-1735')}]",
    lambda p: (
        "Answer: INV-1735 was paid by a charge that succeeded."
        if '"succeeded"' in p[-400:]
        else "Answer: I could not find the charge of INV-1735."
    ),
]


@pytest.mark.parametrize(
    "summarize,expected", [(keep_ids_summary, "ch_3WlhgN"), (naive_summary, "ch_1735")]
)
def test_compaction_hazard_a_summary_without_the_id(tools, summarize, expected):
    guards = Guards(
        compact_at=500, keep_last=1, summarize=summarize, count=lambda t: len(t.split())
    )
    result = ask(
        "Which charge paid INV-1735 of cus_8812, and did it succeed?",
        CopyingModel(HAZARD),
        tools,
        guards=guards,
    )
    assert "compacted" in [s.guard for s in result.steps]
    assert result.steps[2].action["args"] == [expected]
    assert ("succeeded" in result.answer) == (expected == "ch_3WlhgN")
    prompt = result.transcript.spans[0]
    assert prompt[0] == "prompt" and "Question: Which charge paid INV-1735" in prompt[1]
    assert "list_invoices[customer_id, since]" in prompt[1]  # tool list pinned
    text = result.transcript.text
    assert "Action: list_invoices[cus_8812, 2026-01-01]" in text  # the call itself verbatim


def test_without_compaction_the_transcript_keeps_growing(tools):
    result = ask(
        "Which charge paid INV-1735?", CopyingModel(HAZARD), tools, guards=Guards(compact_at=None)
    )
    assert "compacted" not in [s.guard for s in result.steps]
    assert result.steps[-1].prompt_tokens > 500


# --------------------------------------------------------------------------- the native loop


def test_compaction_summarises_old_tool_results_and_keeps_ids(tools):
    def call(tool, **arguments):
        return {"thought": f"Call {tool}.", "tool_calls": [{"name": tool, "arguments": arguments}]}

    lookups = [
        call("list_invoices", customer_id="cus_2234", since="2026-01-01"),
        call("find_invoice", invoice_id="INV-2291"),
        call("get_payments", invoice_id="INV-2291"),
        {"thought": "Done.", "answer": "done"},
    ]
    messages: list[dict] = []
    steps = list(
        run_native(
            "q",
            ScriptedChatModel(lookups),
            tools,
            messages=messages,
            guards=Guards(compact_at=300, keep_last=1, observation_chars=None),
        )
    )
    assert any(s.guard == "compacted" for s in steps)
    first_tool = next(m for m in messages if m["role"] == "tool")
    assert first_tool["content"].startswith(COMPACTED) and "INV-" in first_tool["content"]
    assert messages[1]["content"] == "q"  # the question stays
    last_tool = [m for m in messages if m["role"] == "tool"][-1]
    assert not last_tool["content"].startswith(COMPACTED)  # the recent step stays
    kept: list[dict] = []
    list(
        run_native(
            "q",
            ScriptedChatModel(lookups),
            tools,
            messages=kept,
            guards=Guards(compact_at=None, observation_chars=None),
        )
    )
    assert not any(str(m["content"]).startswith(COMPACTED) for m in kept)


# --------------------------------------------------------------------------- the summaries


def test_compaction_keeps_error_text_and_ids_verbatim():
    t = Transcript()
    t.add("prompt", "Tools: a[x]\n\nQuestion: q?\nThought:")
    t.add("model", " look\nAction: get_charge[ch_nope1]\n")
    t.add(
        "loop", "Observation: Error: no charge 'ch_nope1'; charge ids look like ch_1KZq8f\nThought:"
    )
    t.add("model", " list\nAction: list_invoices[cus_8812, 2026-07-01]\n")
    t.add(
        "loop",
        'Observation: <<data from list_invoices>> [{"invoice_id": "INV-2041", "charge_ids": '
        '["ch_1KZq8f"]}] <</data>>\nThought:',
    )
    t.add("model", " last\nAction: search[refund]\n")
    t.add("loop", "Observation: []\nThought:")
    assert compact(t, keep_last=1)
    assert t.spans[0][1].endswith("Question: q?\nThought:") and t.spans[1][0] == "loop"
    assert t.kinds[:2] == [None, "summary"] and len(t.kinds) == len(t.spans)
    summary = t.spans[1][1]
    assert "Error: no charge 'ch_nope1'; charge ids look like ch_1KZq8f" in summary
    assert "INV-2041" in summary and "ch_1KZq8f" in summary and "look\n" not in summary
    assert summary.endswith("\nThought:") and t.spans[-2:] == [
        ("model", " last\nAction: search[refund]\n"),
        ("loop", "Observation: []\nThought:"),
    ]
    # A second compaction carries the first summary over.
    t.add("model", " again\nAction: calc[1+1]\n")
    t.add("loop", "Observation: 2\nThought:")
    assert compact(t, keep_last=1)
    assert "ch_nope1" in t.spans[1][1] and "Action: search[refund]" in t.spans[1][1]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "cus_8812",
                "INV-2041",
                "ch_1KZq8f",
                "KB-07",
                "sup_101",
                "total",
                "paid",
                "{",
                "}",
                ",",
                " ",
                "\n",
                "42.0",
                '"',
            ]
        )
    )
)
def test_keep_ids_summary_keeps_every_id(parts):
    text = "".join(parts)
    summary = keep_ids_summary(text)
    assert set(ID_RE.findall(text)) <= set(ID_RE.findall(summary))
