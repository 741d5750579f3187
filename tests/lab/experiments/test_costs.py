"""react_lab.lab.experiments.costs: prompts of production size, real runs, cached prices."""

import pytest

from react_lab.lab.agent.loop import ask
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.experiments import costs
from react_lab.lab.notebook.plots import plot_run
from react_lab.lab.sandbox import db_checksum
from react_lab.protocol import build_prompt
from react_lab.tools import call_tool, default_tools


def test_lab_exemplars_pad_with_real_tool_output(monkeypatch):
    import react_lab.protocol as protocol

    monkeypatch.setattr(protocol, "EXEMPLARS", ())
    exemplars = costs.lab_exemplars(3)
    assert len(exemplars) == 3
    observations = [obs for ex in exemplars for _, _, obs in ex.steps]
    assert any('"status": "refunded"' in obs for obs in observations)
    assert any('"total": 48200.0' in obs for obs in observations)
    with pytest.raises(ValueError, match="only 3 exemplars"):
        costs.lab_exemplars(4)


def test_lab_exemplars_take_the_protocols_exemplars_in_order():
    from react_lab.lab.experiments.costs import EXTRA_EXEMPLARS
    from react_lab.protocol import EXEMPLARS

    assert costs.lab_exemplars(1) == [EXEMPLARS[0]]
    six = costs.lab_exemplars(6)
    assert six[:3] == list(EXEMPLARS) and [ex.question for ex in six[3:]] == [
        question for question, *_ in EXTRA_EXEMPLARS
    ]
    with pytest.raises(ValueError, match="only 6 exemplars"):
        costs.lab_exemplars(7)


def test_production_prompt_has_eight_tools_and_three_exemplars():
    tools = costs.production_tools()
    assert len({t.name for t in tools}) == 8
    prompt = build_prompt("q?", tools, costs.lab_exemplars(3))
    assert prompt.count("Example ") == 3
    assert all(t.usage in prompt for t in tools)


def test_measure_run_predicts_a_scripted_run_exactly():
    # The prompt ends in "Thought:", so each completion starts with the space after it.
    script = [
        " list them.\nAction: list_invoices[cus_8812, 2026-07-01]",
        " check the charge.\nAction: get_charge[ch_1KZq8f]",
        " done.\nAnswer: charged once",
    ]
    result = ask("Was cus_8812 charged twice?", ScriptedModel(script), default_tools())
    # ScriptedModel counts whitespace-separated words; count the spans the same way.
    measured = costs.measure_run(result, lambda text: len(text.split()))
    assert measured["steps"] == [1, 2, 3]
    # invoice rows; no observation after the answer
    assert measured["O"][0] > 50 and measured["O"][2] == 0
    assert measured["predicted"] == measured["reported"]
    assert measured["error"] == [0, 0, 0]
    # the mean-size line meets the real one at the last step (means over re-sent steps only)
    assert abs(measured["predicted_mean"][-1] - measured["reported"][-1]) <= 2
    # the stacked parts add up to the prediction; the first request re-sends nothing
    assert measured["resent_A"][0] == measured["resent_O"][0] == 0
    assert all(
        p == measured["P"] + a + o
        for p, a, o in zip(measured["predicted"], measured["resent_A"], measured["resent_O"])
    )
    assert measured["resent_O"][2] == measured["O"][0] + measured["O"][1]
    fig = plot_run(measured, unit="words")
    assert len(fig.axes) == 2
    for ax in fig.axes:
        assert ax.get_ylim()[0] == 0 and "(words)" in ax.get_ylabel()


def test_request_texts_are_what_each_step_sent():
    script = [" list them.\nAction: list_invoices[cus_8812, 2026-07-01]", " done.\nAnswer: once"]
    model = ScriptedModel(script)
    result = ask("Was cus_8812 charged twice?", model, default_tools())
    assert costs.request_texts(result) == model.prompts


def test_production_tools_describe_the_two_money_tools_and_run_neither(shipped_sum):
    tools = {t.name: t for t in costs.production_tools()}
    pay, refund = tools["schedule_payment"], tools["refund_charge"]
    assert pay.side_effect and refund.side_effect
    assert pay.description.endswith("Moves real money.") and "cents" in refund.description
    unapproved = call_tool(tools, "schedule_payment", ["INV-2291", "10"])
    assert unapproved.guard == "approval" and "not approved" in unapproved.error
    written = call_tool(tools, "schedule_payment", ["INV-2291", "10"], approved=True)
    assert "attempt to write a readonly database" in written.error
    refund = call_tool(tools, "refund_charge", ["ch_1KZq8f"], approved=True)
    assert "does not run refunds" in refund.error
    assert db_checksum() == shipped_sum


def test_running_totals():
    assert costs.running([1, 2, 3]) == [1, 3, 6] and costs.running([]) == []


def test_cached_cost():
    full = costs.cached_cost(1000, 600, 100, 10, discount=1.0)
    assert full["billed_tokens"] == full["total_tokens"] == 41500
    free = costs.cached_cost(1000, 600, 100, 10, discount=0.0)
    assert free["fresh_per_step"] == [1000] + [700] * 9  # only the newest text is fresh: linear
    prefix_only = costs.cached_cost(1000, 600, 100, 10, discount=0.5, scope="prefix")
    assert prefix_only["billed_tokens"] == 41500 - 9 * 1000 * 0.5
    with pytest.raises(ValueError, match="between 0 and 1"):
        costs.cached_cost(1000, 600, 100, 10, discount=2)
