"""The migration experiment: the reference agent's two loops, counted as notebook 07 counts."""

import importlib.util
import json

import pytest

from react_lab import agent as reference
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.llama_state import ContextWindowExceeded
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.experiments import agent_runs, migration_runs
from react_lab.lab.experiments.migration import call_problem, measured, named_args
from react_lab.tools import default_tools

TOOLS = default_tools()
TASK = migration_runs.tasks_named("paid_in_full-01")[0]  # Has supplier invoice INV-2291 been paid?
TEXT, NATIVE = migration_runs.ARMS["text"], migration_runs.ARMS["native"]


def call(name, **arguments):
    return {"thought": f"I call {name}.", "tool_calls": [{"name": name, "arguments": arguments}]}


def run(arm, script):
    """One record of ``arm`` on :data:`TASK`, the model scripted in the arm's protocol."""
    if arm.protocol == "text":
        return migration_runs.run_one(
            arm, TASK, model=ScriptedModel(script), chat=None, tools=TOOLS
        )
    return migration_runs.run_one(
        arm, TASK, model=None, chat=ScriptedChatModel(script), tools=TOOLS
    )


# --------------------------------------------------------------------------- the runs


def test_the_text_arm_runs_the_reference_run_loop_with_its_guards_and_schema_check():
    record = run(
        TEXT,
        [
            " I list.\nAction: list_invoices[cus_8812, July 1st]",  # the schema check refuses it
            " I look.\nAction: find_invoice[INV-2291]",
            " Again.\nAction: find_invoice[INV-2291]",  # the repeat guard refuses it
            " I am not sure.",
            " No, not yet.",  # the best effort
        ],
    )
    wrote = [s["loop_wrote"] for s in record["steps"]]
    assert "list_invoices was not run" in wrote[0] and '"INV-2291"' in wrote[1]
    assert wrote[2] == "\nObservation: Error: that call already ran; see above.\nThought:"
    assert wrote[3].endswith("Thought: I must answer now.\nAnswer:") and wrote[4] is None
    assert (record["answer"], record["stopped_by"], record["n_steps"]) == (
        "[best effort] No, not yet.",
        "max_steps",
        migration_runs.MAX_STEPS + 1,
    )
    assert [s["completion"] for s in record["steps"]][-1] == " No, not yet."
    per_step = [
        [s["problems"][k] for k in ("unreadable", "invalid", "undone", "calls")]
        for s in record["steps"]
    ]
    assert per_step == [[0, 1, 0, 1], [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 1, 0], [0, 0, 0, 0]]
    assert record["problems"] == {
        "unreadable": 0,
        "invalid": 1,
        "undone": 1,
        "calls": 3,
        "leaked": 0,
        "steps": 5,
    }
    assert record["correct"]  # "No, not yet." states the gold; the label is ignored


def test_the_native_arm_runs_the_reference_run_native_and_keeps_each_reply():
    record = run(
        NATIVE,
        [call("find_invoice", invoice_id="INV-2291"), {"thought": "Approved.", "answer": "No."}],
    )
    first, last = record["steps"]
    assert [c["name"] for c in first["tool_calls"]] == ["find_invoice"]
    assert json.loads(first["tool_calls"][0]["arguments"]) == {"invoice_id": "INV-2291"}
    [result] = first["loop_wrote"]
    assert result["role"] == "tool" and '"INV-2291"' in result["content"]
    assert (last["completion"], last["loop_wrote"]) == ("No.", None)
    assert (record["answer"], record["stopped_by"], record["correct"]) == ("No.", "answer", True)


def test_the_native_arm_out_of_steps_stopped_by_max_steps():
    record = run(NATIVE, [call("find_invoice", invoice_id="INV-2291")])  # the last call repeats
    assert (record["answer"], record["stopped_by"]) == (None, "max_steps")
    assert record["n_steps"] == migration_runs.MAX_STEPS


def test_a_record_counts_as_measured_counts():
    """One way of counting: the experiment's record and notebook 07's :func:`measured` agree."""
    script = [
        " I look.\nAction: find_invoice[INV-2291].",
        " x\nAction: nope[1]",
        " None.\nAnswer: No.",
    ]
    record = run(TEXT, script)
    loop = migration_runs.loop_of(TEXT)
    exemplars = migration_runs.exemplars_of(TEXT, TASK)
    live = measured(loop, TASK, ScriptedModel(script), TOOLS, exemplars)
    assert record["problems"] == {k: live[k] for k in record["problems"]}
    assert (record["problems"]["unreadable"], record["problems"]["invalid"]) == (1, 1)
    assert (record["answer"], record["correct"]) == (live["answer"], live["right"])


def test_a_prompt_past_the_context_window_ends_the_run_and_keeps_the_calls_before_it():
    class Full(ScriptedModel):
        def complete(self, prompt, **options):
            if self.calls:
                raise ContextWindowExceeded("the prompt does not fit")
            return super().complete(prompt, **options)

    record = migration_runs.run_one(
        TEXT, TASK, model=Full([" I look.\nAction: find_invoice[INV-2291]"]), chat=None, tools=TOOLS
    )
    assert (record["stopped_by"], record["answer"], record["n_steps"]) == (
        "context_window",
        None,
        1,
    )
    assert record["steps"][0]["loop_wrote"] is None


def test_the_experiment_runs_scripted_models_summarises_them_and_resumes_from_its_log(tmp_path):
    log = tmp_path / "runs.jsonl"
    model = ScriptedModel([" It is paid."])
    chat = ScriptedChatModel([{"thought": "t", "answer": "no idea"}])
    records = migration_runs.run_experiment(
        [TASK], ["text", "native"], model=model, chat=chat, log=log, progress=None
    )
    assert [r["arm"] for r in records] == ["text", "native"]
    summary = migration_runs.summarize(records)
    # four unlabelled completions, then the best effort, read as the answer
    assert summary["text"]["undone"] == {"count": 4, "of": 5, "runs": 1}
    assert summary["text"]["stopped_by"] == {"max_steps": 1}
    assert summary["native"]["undone"]["count"] == 0 and summary["native"]["stopped_by"] == {
        "answer": 1
    }
    with log.open("a") as fh:
        fh.write('{"arm": "te')  # a run stopped mid-write
    spent = ScriptedModel(["unused"], repeat_last=False)
    spent.calls = 1  # any call raises IndexError
    again = migration_runs.run_experiment(
        [TASK], ["text", "native"], model=spent, chat=spent, log=log, progress=None
    )
    assert again == json.loads(json.dumps(records))  # read back from the log, not run
    migration_runs.run_experiment(
        [TASK], ["native_no_exemplar"], model=model, chat=chat, log=log, progress=None
    )
    lines = log.read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[-1])["arm"] == "native_no_exemplar"
    with pytest.raises(ValueError, match="unknown arm 'txt'"):
        migration_runs.run_experiment([TASK], ["txt"], model=model, chat=chat)


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


# --------------------------------------------------------------------------- the fingerprint


def test_the_fingerprint_holds_the_reference_code_the_loops_run(monkeypatch):
    code = migration_runs.agent_code()
    assert set(code["pieces"]) == {"observe", "run_loop", "run_native"}
    assert code["pieces"]["run_loop"][0].startswith("def run_loop_guards(")  # 06's edit
    assert code["pieces"]["observe"][0].startswith("def observe_args(")  # 04's edit
    assert code["reads"]["STOP"] == reference.STOP  # read as run_loop's default
    assert code["reads"]["ACTION_RE"] == reference.ACTION_RE.pattern
    config = migration_runs.results_config([TASK], ["text"])
    before = migration_runs.fingerprint_inputs(config)
    monkeypatch.setattr(reference, "STOP", ["Observation"])
    assert migration_runs.fingerprint_inputs(config).prompt != before.prompt
    first = before.prompt["first_prompts"]["text"][0]
    assert "find_invoice" in first and "  more[" not in first  # the tools the loop is given


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
        codes.append(agent_runs._code(module.agent))
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
    assert loaded.fingerprint["code"] == migration_runs.CODE_VERSION
