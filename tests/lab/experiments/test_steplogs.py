"""react_lab.lab.experiments.steplogs: one JSON line per step, read back as written."""

from react_lab.lab.agent.loop import ask
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.experiments.steplogs import EVENT_FIELDS, log_run, read_jsonl, step_event
from react_lab.lab.notebook.tables import html_table
from react_lab.tools import default_tools


def test_step_events_jsonl_round_trip(tmp_path):
    model = ScriptedModel(
        [
            " Look it up.\nAction: find_invoice[INV-2041]\n",
            " Try again.\nAction: list_invoices[cus_8812]\n",
            " Done.\nAnswer: 129.00",
        ]
    )
    tools = default_tools()
    result = ask("What is the total of INV-2041?", model, tools)
    path = log_run(result, tmp_path / "run.jsonl", "run-1", task_id="t1", tools=tools)
    log_run(result, path, "run-2", task_id="t1", tools=tools)  # appends
    events = read_jsonl(path)
    assert len(events) == 6 and [e["run_id"] for e in events] == ["run-1"] * 3 + ["run-2"] * 3
    first, second, last = events[:3]
    assert set(first) == set(EVENT_FIELDS)
    assert first["tool"] == "find_invoice" and first["args"] == {"invoice_id": "INV-2041"}
    assert first["args_valid"] is True and first["error"] is None
    assert first["observation_chars"] == len(result.steps[0].observation)
    assert 0 < first["observation_tokens"] < first["observation_chars"]
    assert second["args"] == {"customer_id": "cus_8812"} and second["args_valid"] is False
    assert second["error"] and last["answer"] == "129.00" and last["tool"] is None
    table = html_table(events, ["step", "tool", "args", "error"], max_chars=20)
    assert table.count("<tr>") == 7 and "&quot;" in table and "…" in table


def test_a_step_without_tools_is_logged_without_a_verdict_on_its_arguments():
    model = ScriptedModel(
        [" Look it up.\nAction: find_invoice[INV-2041]\n", " Done.\nAnswer: 129.00"]
    )
    result = ask("What is the total of INV-2041?", model, default_tools())
    first, last = (step_event(s, run_id="r", count_tokens=len) for s in result.steps)
    assert first["args"] == ["INV-2041"] and first["args_valid"] is None
    assert first["observation_tokens"] == first["observation_chars"] > 0  # count_tokens=len
    assert last["observation_tokens"] == 0 and last["answer"] == "129.00"
