"""The migration experiment's pieces: the two agents and the three problems."""

import importlib.util

import pytest

from react_lab.lab.agent.trace import Step
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.experiments import migration_runs
from react_lab.lab.experiments.migration import (
    call_problem,
    named_args,
    native_agent,
    run_problems,
    step_problems,
    text_agent,
)
from react_lab.lab.guards import LabGuards
from react_lab.lab.sandbox import db_checksum, payment_tools, working_copy
from react_lab.tools import default_tools

QUESTION = "Has supplier invoice INV-2291 been paid?"
TOOLS = default_tools()
OFFERED = LabGuards().offered_tools(TOOLS)


def call(name, **arguments):
    return {"thought": f"I call {name}.", "tool_calls": [{"name": name, "arguments": arguments}]}


# --------------------------------------------------------------------------- the two agents


def test_both_agents_make_the_same_call_and_give_the_same_answer():
    text = text_agent(
        QUESTION,
        ScriptedModel(
            [
                " I look it up.\nAction: find_invoice[INV-2291]",
                " Approved.\nAnswer: approved, not paid.",
            ]
        ),
        TOOLS,
    )
    native = native_agent(
        QUESTION,
        ScriptedChatModel(
            [
                call("find_invoice", invoice_id="INV-2291"),
                {"thought": "Approved.", "answer": "approved, not paid."},
            ]
        ),
        TOOLS,
    )
    for result in (text, native):
        assert result.stopped_by == "answer" and result.answer == "approved, not paid."
        assert result.steps[0].action == {
            "tool": "find_invoice",
            "args": {"invoice_id": "INV-2291"},
        }
        assert '"INV-2291"' in result.steps[0].observation


def test_the_native_agent_sends_schemas_and_keys_each_result_to_its_call_id():
    chat = ScriptedChatModel(
        [call("find_invoice", invoice_id="INV-2291"), {"thought": "t", "answer": "a"}]
    )
    native_agent(QUESTION, chat, TOOLS)
    messages, schemas = chat.requests[1]
    assert {s["function"]["name"] for s in schemas} >= set(TOOLS)
    sent = messages[-2]["tool_calls"][0]["id"]
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == sent


def test_the_approval_gate_still_refuses_a_payment_in_the_native_agent(shipped_sum):
    copy = working_copy()
    tools = {**TOOLS, **payment_tools(copy)}
    chat = ScriptedChatModel(
        [
            call("schedule_payment", invoice_id="INV-2291", amount=48200),
            {"thought": "t", "answer": "not paid"},
        ]
    )
    result = native_agent(QUESTION, chat, tools)
    assert result.steps[0].action["tool"] == "schedule_payment"
    assert "not approved" in result.steps[0].observation
    assert db_checksum() == shipped_sum


def test_the_repeat_guard_still_stops_the_same_call_in_the_native_agent():
    # the last reply repeats
    chat = ScriptedChatModel([call("find_invoice", invoice_id="INV-2291")])
    result = native_agent(QUESTION, chat, TOOLS, max_steps=4)
    assert any("was already run" in (s.observation or "") for s in result.steps[1:])
    assert result.answer is None or result.stopped_by != "answer"


def test_a_bad_call_becomes_an_observation_in_both_agents():
    text = text_agent(
        QUESTION, ScriptedModel([" x\nAction: lookup_invoice[INV-2291]", " x\nAnswer: no"]), TOOLS
    )
    native = native_agent(
        QUESTION,
        ScriptedChatModel(
            [call("find_invoice", invoice="INV-2291"), {"thought": "t", "answer": "no"}]
        ),
        TOOLS,
    )
    assert "unknown tool 'lookup_invoice'" in text.steps[0].observation
    assert native.steps[0].observation.startswith("Error: find_invoice was not run")
    assert "invoice_id" in native.steps[0].observation


def test_named_args_names_positional_arguments_by_the_schema():
    assert named_args(TOOLS, "list_invoices", ["cus_4417", "2026-07-01"]) == {
        "customer_id": "cus_4417",
        "since": "2026-07-01",
    }
    assert named_args(TOOLS, "find_invoice", ["INV-1", "extra"]) == {
        "invoice_id": "INV-1",
        "argument_2": "extra",
    }
    assert named_args(TOOLS, "nope", ["a"]) == ["a"]
    assert call_problem(TOOLS, "find_invoice", {"invoice_id": "INV-2291"}) is None
    assert "unknown tool 'nope'" in call_problem(TOOLS, "nope", {})
    assert "never closed" in call_problem(TOOLS, "find_invoice", '{"invoice_id": "INV-2291"')


# --------------------------------------------------------------------------- the three problems


@pytest.mark.parametrize(
    "completion, expected",
    [
        (" I look.\nAction: find_invoice[INV-2291]", (0, 0, 0, 1)),
        (' I look.\nAction: find_invoice[INV-2291]\nObservation: {"status": "paid"}', (1, 0, 0, 1)),
        (" It is paid.", (0, 0, 1, 0)),
        ("", (0, 0, 1, 0)),
        (" I look.\nAction: lookup_invoice[INV-2291]", (0, 1, 0, 1)),
        (" I look.\nAction: list_invoices[cus_8812, July 1st]", (0, 1, 0, 1)),
        (" Done.\nAnswer: paid.\nQuestion: what next?", (0, 0, 1, 0)),
        (" Done.\nAnswer: paid.", (0, 0, 0, 0)),
    ],
)
def test_text_step_problems(completion, expected):
    got = step_problems(Step(1, completion=completion, finish_reason="stop"), "text", OFFERED)
    assert (got["unreadable"], got["invalid"], got["undone"], got["calls"]) == expected


def test_native_step_problems():
    two = [
        {"tool": "find_invoice", "args": {"invoice_id": "INV-2291"}},
        {"tool": "nope", "args": {}},
    ]
    cases = [
        (Step(1, leaked=True), (1, 0, 0, 0)),
        (Step(1, finish_reason="length"), (1, 0, 0, 0)),
        (Step(1, finish_reason="stop"), (0, 0, 1, 0)),
        (Step(1, answer="paid"), (0, 0, 0, 0)),
        (Step(1, action={"tool": "find_invoice", "args": {"invoice": "x"}}), (0, 1, 0, 1)),
        (Step(1, action={**two[0], "calls": two}), (0, 1, 0, 2)),
    ]
    for step, expected in cases:
        got = step_problems(step, "native", OFFERED)
        assert (got["unreadable"], got["invalid"], got["undone"], got["calls"]) == expected, step
    with pytest.raises(ValueError, match="'text' or 'native'"):
        step_problems(Step(1), "grammar", OFFERED)


def test_run_problems_sums_a_run():
    result = text_agent(
        QUESTION,
        ScriptedModel([" x\nAction: lookup_invoice[INV-2291]", " It is paid."]),
        TOOLS,
        max_steps=2,
    )
    assert run_problems(result, "text", OFFERED) == {
        "unreadable": 0,
        "invalid": 1,
        "undone": 1,
        "calls": 1,
        "steps": 2,
    }


# --------------------------------------------------------------------------- the experiment


def test_the_experiment_runs_scripted_models_and_summarises_them():
    task = migration_runs.experiment_tasks()[0]
    model = ScriptedModel([" It is paid."])
    chat = ScriptedChatModel([{"thought": "t", "answer": "no idea"}])
    records = migration_runs.run_experiment(
        [task], ["text", "native"], model=model, chat=chat, progress=None
    )
    assert [r["arm"] for r in records] == ["text", "native"]
    summary = migration_runs.summarize(records)
    # four unlabelled completions
    assert summary["text"]["undone"] == {"count": 4, "of": 4, "runs": 1}
    assert summary["native"]["undone"]["count"] == 0 and summary["native"]["stopped_by"] == {
        "answer": 1
    }
    with pytest.raises(ValueError, match="unknown arm 'txt'"):
        migration_runs.run_experiment([task], ["txt"], model=model, chat=chat)


#: One agent written three ways: the first two differ in layout, comments and docstring only.
LAYOUTS = [
    'def agent(x):\n    """A docstring."""\n'
    "    y = x + 1  # a comment\n"
    '    return y, "# a string"\n',
    "def agent(x):\n"
    "    # another comment\n"
    "    y = (x\n"
    "         + 1)\n"
    "    return (y,\n"
    "            '# a string')\n",
    'def agent(x):\n    """A docstring."""\n'
    "    y = x + 2  # a comment\n"
    '    return y, "# a string"\n',
]


def test_the_fingerprint_holds_an_agents_code_not_its_layout_comments_or_docstring(tmp_path):
    codes = []
    for number, source in enumerate(LAYOUTS):
        path = tmp_path / f"layout_{number}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        codes.append(migration_runs._code(module.agent))
    assert (
        codes[0] == codes[1] == ["def agent(x):", "    y = x + 1", "    return (y, '# a string')"]
    )
    assert codes[2] != codes[0]


def test_the_shipped_results_are_current():
    loaded = migration_runs.load()
    assert set(loaded.data["summary"]) == set(migration_runs.ARMS)
    assert len(loaded.data["records"]) == len(migration_runs.ARMS) * len(
        migration_runs.experiment_tasks()
    )
