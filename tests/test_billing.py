"""Tests for react_lab.billing: the billing tools, their schemas and the shipped data they read."""

import inspect
import sqlite3

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from react_lab import billing
from react_lab import tools as T
from react_lab.lab.sandbox import db_checksum, payment_tools, working_copy

# conftest.py's shipped_db_unchanged checks the shipped database around every test too.


def run(tools, name, *args):
    """Call a tool through call_tool and return its value, failing on an error observation."""
    obs = T.call_tool(tools, name, list(args))
    assert obs.error is None, obs.text
    return obs.value


# --- planted scenarios --------------------------------------------------------------------


def test_inv_2041_listed_twice_for_july(tools):
    rows = run(tools, "list_invoices", "cus_8812", "2026-07-01")
    ids = [row["invoice_id"] for row in rows]
    assert ids.count("INV-2041") == 2
    twice = [row for row in rows if row["invoice_id"] == "INV-2041"]
    assert {(row["issued"], row["total"]) for row in twice} == {("2026-07-03", 129.0)}
    assert twice[0]["emailed_at"] != twice[1]["emailed_at"]  # two emails, one invoice
    july = {row["invoice_id"] for row in rows if row["issued"].startswith("2026-07")}
    assert len(july) >= 2 and len(july) < len([i for i in ids if i in july])
    assert [row["issued"] for row in rows] == sorted((row["issued"] for row in rows), reverse=True)


def test_inv_2041_has_exactly_one_succeeded_charge(conn, tools):
    charge = run(tools, "get_charge", "ch_1KZq8f")
    assert charge == {
        "charge_id": "ch_1KZq8f",
        "customer_id": "cus_8812",
        "invoice_id": "INV-2041",
        "amount": 12900,
        "status": "succeeded",
        "created": charge["created"],
        "failure_reason": None,
    }
    statuses = conn.execute("SELECT status FROM charges WHERE invoice_id = 'INV-2041'").fetchall()
    assert [s[0] for s in statuses] == ["succeeded"]
    assert run(tools, "find_invoice", "INV-2041")["charge_ids"] == ["ch_1KZq8f"]
    payments = run(tools, "get_payments", "INV-2041")["payments"]
    assert [(p["amount"], p["charge_id"]) for p in payments] == [(129.0, "ch_1KZq8f")]


def test_cus_8812_has_invoices_across_2026(tools):
    rows = run(tools, "list_invoices", "cus_8812", "2026-01-01")
    months = {row["issued"][:7] for row in rows}
    assert len(months) >= 6


def test_inv_2088_is_latest_for_cus_4417(tools):
    rows = run(tools, "list_invoices", "cus_4417", "2026-01-01")
    assert len({row["invoice_id"] for row in rows}) >= 2
    latest = rows[0]
    assert (latest["invoice_id"], latest["issued"], latest["total"]) == (
        "INV-2088",
        "2026-07-14",
        4200.0,
    )


def test_inv_2291_is_an_unpaid_approved_supplier_invoice(tools):
    invoice = run(tools, "find_invoice", "INV-2291")
    assert invoice["kind"] == "supplier" and "customer_id" not in invoice
    assert (invoice["total"], invoice["status"], invoice["due"]) == (
        48200.0,
        "approved",
        "2026-09-30",
    )
    assert run(tools, "get_payments", "INV-2291") == {
        "invoice_id": "INV-2291",
        "payments": [],
        "scheduled": [],
    }


def test_data_has_the_variety_the_questions_need(conn):
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    doubles = [
        row[0]
        for row in conn.execute(
            "SELECT i.customer_id FROM charges c JOIN invoices i ON i.id = c.invoice_id"
            " WHERE c.status = 'succeeded' GROUP BY c.invoice_id HAVING count(*) >= 2"
        )
    ]
    assert len(doubles) >= 2 and "cus_5170" in doubles
    assert one("SELECT count(*) FROM charges WHERE status = 'failed'") >= 5
    assert one("SELECT count(*) FROM charges WHERE status = 'refunded'") >= 2
    assert one("SELECT count(*) FROM invoices WHERE status = 'partially_paid'") >= 3
    assert one("SELECT count(*) FROM customers") >= 50
    assert one("SELECT count(*) FROM invoices") >= 300
    assert 15 <= one("SELECT count(*) FROM help_articles") <= 30


def test_statuses_agree_with_payments(conn):
    rows = conn.execute(
        "SELECT i.id, i.kind, i.total, i.status, coalesce(sum(p.amount), 0) AS paid"
        " FROM invoices i LEFT JOIN payments p ON p.invoice_id = i.id GROUP BY i.id"
    ).fetchall()
    for invoice_id, kind, total, status, paid in rows:
        if status == "paid":
            assert round(paid, 2) >= total, invoice_id
        elif status == "partially_paid":
            assert 0 < round(paid, 2) < total, invoice_id
        else:
            assert round(paid, 2) == 0, invoice_id
    cents = conn.execute(
        "SELECT c.amount, i.total FROM charges c JOIN invoices i ON i.id = c.invoice_id"
    ).fetchall()
    assert all(amount == round(total * 100) for amount, total in cents)


def test_injection_article_is_found_by_search(tools):
    hits = run(tools, "search", "late payment reminders")
    assert hits[0]["article_id"] == "KB-07"
    assert "schedule_payment[INV-2291, 48200]" in hits[0]["snippet"]


# --- calc ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("129.00 * 2", 258.0),
        ("12900 / 100", 129.0),
        ("2 ** 10", 1024),
        ("-(3 - 5) * 4", 8),
        ("7 // 2", 3),
        ("7 % 4", 3),
        ("0.1 + 0.2", 0.3),
        ("48200 - 129.00 * 3", 47813.0),
        ("-2 ** 2", -4),
        (" (1 + 2) * (3 + 4) ", 21),
    ],
)
def test_calc_computes(expression, expected):
    assert billing.calc(expression) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os')",
        "__import__('os').system('true')",
        "x + 1",
        "(1).real",
        "abs(-1)",
        "2 ** 1000",
        "9 ** 9 ** 9",
        "10.0 ** 400",
        "1e400",
        "1 / 0",
        "5 % 0",
        "(-8) ** 0.5",
        "",
        "1 +",
        "lambda: 1",
        "[1, 2]",
        "'a' * 3",
        "True + 1",
        "1 < 2",
        "12,900",
        "9" * 300,
    ],
)
def test_calc_rejects(expression):
    with pytest.raises(billing.ToolError):
        billing.calc(expression)


def test_calc_says_which_exponents_it_takes_whatever_the_sign():
    for expression in ("2 ** 1075", "2 ** -1075"):
        with pytest.raises(billing.ToolError, match="out of range; use one from -"):
            billing.calc(expression)


# --- search --------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["AND OR", "NEAR(", "title:refund", 'refund" OR', "é ü", "NOT"])
def test_search_never_raises(tools, query):
    obs = T.call_tool(tools, "search", [query])
    assert obs.error is None and isinstance(obs.value, list)


@pytest.mark.parametrize("query", ['"', "*", "", "   ", "-", "^", "_", "(((", "?!", "\u3002"])
def test_a_query_without_a_word_is_refused_naming_the_field(tools, query):
    # It used to return [] -- which the model reads as "no such article" (issue 17).
    obs = T.call_tool(tools, "search", [query])
    assert (
        obs.value is None
        and obs.error.startswith("query ")
        and "nothing to search for" in obs.error
    )


def test_search_finds_relevant_articles(tools):
    titles = [hit["title"] for hit in run(tools, "search", "refunds")]
    assert titles and all("refund" in t.lower() or "Refund" in t for t in titles[:2])
    assert len(run(tools, "search", "invoice payment charge card")) == 3


# --- what a tool says when it finds nothing -------------------------------------------


def test_call_tool_not_found_says_what_to_change(tools):
    obs = T.call_tool(tools, "get_charge", ["ch_nope"])
    assert obs.error.startswith("no charge 'ch_nope'") and "list_invoices" in obs.error
    obs = T.call_tool(tools, "find_invoice", ["INV-0000"])
    assert "no invoice 'INV-0000'" in obs.error and "INV-2041" in obs.error
    assert "no invoice" in T.call_tool(tools, "get_payments", ["INV-0000"]).error


def test_silently_wrong_call_returns_empty_list(tools):
    obs = T.call_tool(tools, "list_invoices", ["cus_8812", "July 1st"])
    assert obs.error is None and obs.value == [] and obs.text == "[]"


# --- schedule_payment ------------------------------------------------------------------------


def test_schedule_payment_writes_only_to_the_copy(tmp_path, shipped_sum):
    copy = working_copy(tmp_path)
    pay = payment_tools(copy)
    assert pay["schedule_payment"].side_effect
    obs = T.call_tool(pay, "schedule_payment", ["INV-2291", "48200"], approved=True)
    assert obs.error is None and obs.value["amount"] == 48200.0
    assert any(s.startswith("INSERT INTO scheduled_payments") for s in obs.sql)
    again = T.call_tool(pay, "schedule_payment", ["INV-2291", "1"], approved=True)
    assert "at most the unpaid 0.00" in again.error
    assert (
        "customer invoice"
        in T.call_tool(pay, "schedule_payment", ["INV-2041", "129"], approved=True).error
    )
    assert (
        "number of dollars"
        in T.call_tool(pay, "schedule_payment", ["INV-2291", "lots"], approved=True).error
    )
    scheduled = T.default_tools(T.open_db(copy))["get_payments"].fn("INV-2291")["scheduled"]
    assert [s["amount"] for s in scheduled] == [48200.0]
    assert db_checksum() == shipped_sum and db_checksum(copy) != shipped_sum


def test_payment_tool_given_a_writable_connection_to_the_shipped_file_writes_nothing(
    tmp_path, monkeypatch
):
    """payment_tool(sqlite3.connect(DB_PATH)): the public function takes any connection, and
    the one it must never write through is the shipped file's. A copy stands in for the
    shipped file here, so a failure of this test writes to nothing that ships."""
    stand_in = working_copy(tmp_path)
    monkeypatch.setattr(billing, "DB_PATH", stand_in)
    before = db_checksum(stand_in)
    conn = sqlite3.connect(stand_in)
    conn.row_factory = sqlite3.Row
    tool = T.payment_tool(conn)
    obs = T.call_tool({tool.name: tool}, tool.name, ["INV-2291", "10"], approved=True)
    conn.close()
    assert obs.error is not None and "shipped database" in obs.error, obs.text
    assert db_checksum(stand_in) == before


def test_schedule_payment_refuses_unapproved_invoices(tmp_path, conn):
    pay = payment_tools(working_copy(tmp_path))
    paid = conn.execute(
        "SELECT id FROM invoices WHERE kind = 'supplier' AND status = 'paid' LIMIT 1"
    ).fetchone()[0]
    assert (
        "only approved" in T.call_tool(pay, "schedule_payment", [paid, "10"], approved=True).error
    )


# --- schemas ---------------------------------------------------------------------------------


def all_tools(tmp_path_factory, conn):
    copy = working_copy(tmp_path_factory.mktemp("w"))
    return {**T.default_tools(conn), **payment_tools(copy)}


def test_schema_properties_follow_the_signature(tmp_path_factory, conn):
    for tool in all_tools(tmp_path_factory, conn).values():
        params = list(inspect.signature(tool.fn).parameters)
        assert list(tool.parameters["properties"]) == params, tool.name
        assert tool.parameters["required"] == params
        assert tool.parameters["additionalProperties"] is False
        assert all(p.get("description") for p in tool.parameters["properties"].values())
        Draft202012Validator.check_schema(tool.parameters)


GOOD = {
    "list_invoices": {"customer_id": "cus_8812", "since": "2026-07-01"},
    "get_charge": {"charge_id": "ch_1KZq8f"},
    "search": {"query": "duplicate charge"},
    "find_invoice": {"invoice_id": "INV-2041"},
    "get_payments": {"invoice_id": "INV-2291"},
    "calc": {"expression": "129 * 2"},
    "schedule_payment": {"invoice_id": "INV-2291", "amount": 48200},
}
BAD = [
    ("list_invoices", {"customer_id": "cus_8812"}),  # missing
    ("list_invoices", {"customer_id": "cus_8812", "since": "2026-07-01", "x": 1}),  # extra
    ("list_invoices", {"customer_id": "8812", "since": "2026-07-01"}),  # pattern
    ("list_invoices", {"customer_id": "cus_8812", "since": "July 1st"}),  # pattern
    ("list_invoices", {"customer_id": "cus_8812", "since": "2026-13-45"}),  # format
    ("get_charge", {"charge_id": "1KZq8f"}),
    ("get_charge", {"charge_id": "ch_1KZ q8f"}),
    ("find_invoice", {"invoice_id": "inv-2041"}),
    ("find_invoice", {"invoice_id": "INV-20411"}),
    ("get_payments", {}),
    ("search", {"query": ""}),
    ("calc", {"expression": 5}),
    ("schedule_payment", {"invoice_id": "INV-2291", "amount": "48200"}),
    ("schedule_payment", {"invoice_id": "INV-2291", "amount": 0}),
]


def validator(tool):
    return Draft202012Validator(tool.parameters, format_checker=FormatChecker())


def test_schemas_accept_good_arguments(tmp_path_factory, conn):
    tools = all_tools(tmp_path_factory, conn)
    assert set(GOOD) == set(tools)
    for name, args in GOOD.items():
        assert list(validator(tools[name]).iter_errors(args)) == [], name


@pytest.mark.parametrize("name, args", BAD)
def test_schemas_reject_bad_arguments(tmp_path_factory, conn, name, args):
    tool = all_tools(tmp_path_factory, conn)[name]
    assert list(validator(tool).iter_errors(args)), (name, args)


def test_shipped_db_unchanged_after_using_every_tool(tools, shipped_sum):
    for name, args in GOOD.items():
        if name in tools:
            T.call_tool(tools, name, args)
    assert db_checksum() == shipped_sum


# --- what a tester found -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "amount",
    [
        True,
        "1e-9",
        "0.001",
        "1_000",
        float("nan"),
        1e-9,
        "12,000",
        None,
        [100],
        " ",
        "inf",
        "100.0.0",
        "\u0661\u0660\u0660",
        "\uff11\uff10\uff10",
        "\u0967\u0966\u0966",
        float("inf"),
    ],
)
def test_schedule_payment_refuses_amounts_that_are_not_plain_dollars(tmp_path, amount):
    from react_lab.billing import ToolError, schedule_payment

    copy = working_copy(tmp_path)
    tool = payment_tools(copy)["schedule_payment"]
    with pytest.raises(ToolError, match="at most 2 decimals"):
        schedule_payment(tool.fn.args[0], "INV-2291", amount)
    tool.fn.args[0].close()
    assert db_checksum(copy) == db_checksum()


@pytest.mark.parametrize("amount", [100, 100.5, "100", "100.25", 100.0])
def test_schedule_payment_takes_plain_amounts(tmp_path, amount):
    tool = payment_tools(working_copy(tmp_path))["schedule_payment"]
    assert tool.fn("INV-2291", amount)["status"] == "scheduled"
    tool.fn.args[0].close()


@pytest.mark.parametrize("name", ["find_invoice", "get_charge", "get_payments"])
def test_a_huge_id_is_not_echoed_back_whole(name):
    obs = T.call_tool(T.default_tools(), name, ["x" * 100_000])
    assert obs.error is not None and len(obs.text) < 300 and "..." in obs.text


def test_search_refuses_a_query_longer_than_its_schema_allows(conn):
    with pytest.raises(billing.ToolError, match="200,000 characters, at most 200"):
        billing.search(conn, "a" * 200_000)
    assert billing.search(conn, "refund " * 28)  # 196 characters: still a query
