"""The ladder's tool designs: each variant described, the database's values kept, and the
distractor tools that answer from their own table."""

import pytest

from react_lab.lab.experiments.tool_designs import (
    DISTRACTORS,
    VARIANTS,
    get_tools,
    with_distractors,
)
from react_lab.tools import call_tool, default_tools


def test_every_tool_variant_has_its_description():
    from react_lab.lab.experiments.tool_designs import describe

    assert all(describe(v) for v in VARIANTS)
    assert describe("oldest_first").startswith("list_invoices lists oldest first")
    with pytest.raises(ValueError, match="unknown tool variant"):
        describe("shiny")


def test_tool_variants_keep_the_database_values():
    base = default_tools()
    rows = call_tool(base, "list_invoices", ["cus_4417", "2026-01-01"]).value
    assert (
        call_tool(get_tools("oldest_first"), "list_invoices", ["cus_4417", "2026-01-01"]).value
        == rows[::-1]
    )
    counted = call_tool(get_tools("counted"), "list_invoices", ["cus_4417", "2026-01-01"]).value
    assert counted["invoice_count"] == len({r["invoice_id"] for r in rows})
    charge = call_tool(get_tools("dollars"), "get_charge", ["ch_1KZq8f"]).value
    assert (
        charge["amount_dollars"] * 100
        == charge["amount_cents"]
        == call_tool(base, "get_charge", ["ch_1KZq8f"]).value["amount"]
    )
    paid = call_tool(get_tools("sums"), "get_payments", ["INV-2041"]).value
    assert paid["paid_in_full"] is True and paid["total_paid"] == paid["invoice_total"]
    statuses = call_tool(get_tools("statuses"), "find_invoice", ["INV-2041"]).value
    assert statuses["charges"] == [{"charge_id": "ch_1KZq8f", "status": "succeeded"}]
    # a wrapped tool still checks its arguments before running
    assert call_tool(get_tools("slim"), "find_invoice", ["INV-2041", "x"]).error
    assert set(get_tools("dedupe+dollars")) == set(base)
    with pytest.raises(ValueError, match="unknown tool variant"):
        get_tools("nope")
    assert len(VARIANTS) == 10


def test_distractors_are_extra_tools_that_answer_from_their_table():
    tools = with_distractors(default_tools(), 18)
    assert len(tools) == 24 == 6 + len(DISTRACTORS)
    assert call_tool(tools, "get_plan", ["Team"]).value == {"plan": "Team", "value": 129.0}
    assert call_tool(tools, "get_plan", ["Platinum"]).value["value"] is None
    with pytest.raises(ValueError):
        with_distractors(default_tools(), 19)
