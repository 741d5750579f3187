"""Tests for react_lab.tools: the database handle, Tool, call_tool and the tool sets."""

import json
import sqlite3

import pytest

from react_lab import billing
from react_lab import tools as T
from react_lab.lab.builders import build as B
from react_lab.lab.sandbox import working_copy

# conftest.py's shipped_db_unchanged checks the shipped database around every test too.


# --- the database file -------------------------------------------------------------------


def test_open_db_is_read_only(conn):
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM customers")
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("INSERT INTO scheduled_payments (invoice_id, amount) VALUES ('INV-2291', 1)")
    assert conn.execute("SELECT count(*) FROM scheduled_payments").fetchone()[0] == 0


def test_open_db_missing_file_says_how_to_build(tmp_path):
    with pytest.raises(FileNotFoundError, match="react_lab.lab.builders.build"):
        T.open_db(tmp_path / "nope.sqlite")


def test_build_is_deterministic_and_matches_shipped_file(tmp_path):
    first, second = B.build(tmp_path / "a.sqlite"), B.build(tmp_path / "b.sqlite")
    assert first.read_bytes() == second.read_bytes()
    dumps = []
    for path in (first, T.DB_PATH):
        connection = T.open_db(path)
        dumps.append(list(connection.iterdump()))
        connection.close()
    assert dumps[0] == dumps[1]
    assert first.stat().st_size < 1_000_000


def test_record_sql_collects_statements_and_stops(conn):
    with T.record_sql(conn) as sql:
        billing.get_charge(conn, "ch_1KZq8f")
    conn.execute("SELECT 1")
    assert len(sql) == 1 and "FROM charges" in sql[0] and "ch_1KZq8f" in sql[0]


# --- call_tool -----------------------------------------------------------------------------


def test_call_tool_success_has_json_text_value_and_sql(tools):
    obs = T.call_tool(tools, "find_invoice", ["INV-2088"])
    assert obs.error is None and json.loads(obs.text) == obs.value
    assert obs.value["customer_id"] == "cus_4417"
    assert any("FROM invoices" in statement for statement in obs.sql)
    assert T.call_tool(tools, "calc", {"expression": "1 + 1"}).text == "2"


def test_call_tool_unknown_tool_lists_available(tools):
    obs = T.call_tool(tools, "lookup_invoice", ["INV-2041"])
    assert obs.text.startswith("Error: unknown tool 'lookup_invoice'")
    assert (
        "available: list_invoices, get_charge, search, find_invoice, get_payments, calc" in obs.text
    )
    assert "no tools are available" in T.call_tool({}, "calc", ["1"]).text


def test_call_tool_wrong_arity_names_usage(tools):
    obs = T.call_tool(tools, "list_invoices", ["cus_8812"])
    assert "list_invoices takes 2 arguments (customer_id, since); got 1" in obs.error
    assert obs.text == f"Error: {obs.error}"
    extra = T.call_tool(tools, "get_charge", {"charge_id": "ch_1KZq8f", "verbose": True})
    assert "get_charge takes 1 argument (charge_id)" in extra.error and "verbose" in extra.error


@pytest.mark.parametrize(
    "name, args",
    [
        ("calc", None),
        ("calc", 5),
        ("calc", [["1"]]),
        (None, []),
        (["x"], []),
        ("get_charge", [None]),
        ("list_invoices", [object(), object()]),
        ("find_invoice", [{"a": 1}]),
    ],
)
def test_call_tool_never_raises(tools, name, args):
    obs = T.call_tool(tools, name, args)
    assert isinstance(obs, T.Observation) and obs.error and obs.text.startswith("Error: ")


def test_call_tool_reports_sql_errors_as_observations():
    broken = sqlite3.connect(":memory:")  # no tables at all
    obs = T.call_tool(T.default_tools(broken), "get_charge", ["ch_1KZq8f"])
    assert obs.error.startswith("database error in get_charge") and "no such table" in obs.error


def test_usage_and_openai_schema(tools):
    tool = tools["list_invoices"]
    assert tool.usage == "list_invoices[customer_id, since]"
    assert tools["calc"].usage == "calc[expression]"
    schema = tool.openai_schema()
    assert schema == {
        "type": "function",
        "function": {
            "name": "list_invoices",
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }
    assert [s["function"]["name"] for s in T.tool_schemas(tools)] == list(tools)
    assert T.tool_schemas(list(tools.values())) == T.tool_schemas(tools)


# --- the payment tool and error observations ---------------------------------------------


def test_payment_tool_binds_schedule_payment_to_the_connection_it_is_given(tmp_path):
    conn = sqlite3.connect(working_copy(tmp_path), check_same_thread=False)
    conn.row_factory = sqlite3.Row
    tool = T.payment_tool(conn)
    assert (tool.name, tool.parameters) == ("schedule_payment", billing.SCHEDULE_PAYMENT)
    assert tool.side_effect
    assert tool.description.endswith("Moves real money.") and T.connection(tool) is conn
    assert (
        T.call_tool({tool.name: tool}, tool.name, ["INV-2291", "10"], approved=True).value["amount"]
        == 10.0
    )
    conn.close()


def test_error_observations_have_one_builder():
    obs = T.Observation.failure("no such thing", guard="repeat", timed_out=True)
    assert (obs.text, obs.error) == ("Error: no such thing", "no such thing")
    assert obs.guard == "repeat" and obs.timed_out
    assert obs.value is None and obs.sql == []


def test_a_tool_that_returns_text_is_observed_as_written():
    from react_lab.tools import Tool, call_tool

    page = Tool(
        "read_page",
        lambda page_id: 'Line one.\nLine "two".',
        "Read a page.",
        {
            "type": "object",
            "properties": {"page_id": {"type": "string"}},
            "required": ["page_id"],
            "additionalProperties": False,
        },
    )
    out = call_tool({"read_page": page}, "read_page", ["p1"])
    assert out.text == 'Line one.\nLine "two".' and out.value == out.text and out.error is None


@pytest.mark.parametrize("args", [None, 7, 1.5, object()])
def test_arguments_that_are_neither_a_list_nor_an_object_get_the_expected_form(args):
    obs = T.call_tool(T.default_tools(), "search", args)
    assert obs.error and "list of values or an object of named values" in obs.text
    assert "search[" in obs.text  # the usage line shows the expected form


@pytest.mark.parametrize(
    "tool, args, field, kind",
    [
        ("find_invoice", {"invoice_id": ["INV-2041"]}, "invoice_id", "a list"),
        ("find_invoice", [["INV-2041"]], "invoice_id", "a list"),
        ("find_invoice", {"invoice_id": {"id": "INV-2041"}}, "invoice_id", "an object"),
        ("list_invoices", {"customer_id": "cus_8812", "since": ["2026-07-01"]}, "since", "a list"),
        ("get_charge", [("ch_0001",)], "charge_id", "a list"),
        ("calc", {"expression": [1, 2]}, "expression", "a list"),
    ],
)
def test_a_list_or_object_where_one_value_belongs_is_refused_naming_the_field(
    tool, args, field, kind
):
    """Never a database driver's binding error: the argument rule names the field first."""
    obs = T.call_tool(T.default_tools(), tool, args)
    assert obs.error and f"{field}: " in obs.error and f"is {kind}; give one" in obs.error
    assert "binding" not in obs.error and "\n" not in obs.error


def test_a_nul_in_an_action_is_refused_naming_the_field_not_dropped():
    from react_lab.lab.agent.loop import ask
    from react_lab.lab.backends.scripted import ScriptedModel

    model = ScriptedModel(
        [" Look it up.\nAction: find_invoice[INV-20\x0041]", " Done.\nAnswer: none"]
    )
    step = ask("What is INV-2041's total?", model, T.default_tools(), max_steps=2).steps[0]
    assert step.action["tool"] == "find_invoice"
    assert "invoice_id" in step.error and "control character '\\x00'" in step.error


# ---- positional arguments that name their parameters -----------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["customer_id=cus_8812", "since=2026-07-01"],
        ["since=2026-07-01", "customer_id=cus_8812"],  # in any order
        ['customer_id="cus_8812"', "since = 2026-07-01"],  # quotes and spaces
    ],
)
def test_arguments_that_name_their_parameters_reach_them(args):
    tools = T.default_tools()
    named = T.call_tool(tools, "list_invoices", args)
    assert named.value == T.call_tool(tools, "list_invoices", ["cus_8812", "2026-07-01"]).value
    assert named.value  # the customer's invoices, not [] for a customer "customer_id=cus_8812"


def test_a_parameter_named_twice_is_refused_and_other_text_with_equals_is_a_value():
    tools = T.default_tools()
    twice = T.call_tool(tools, "list_invoices", ["customer_id=cus_8812", "customer_id=cus_1"])
    assert twice.error and "customer_id is given twice" in twice.error
    assert T.call_tool(tools, "calc", ["x=1+1"]).error  # "x" names no parameter: the value
    assert T.call_tool(tools, "search", ["query=refund policy"]).value[0]["title"] == (
        "Refund policy"
    )
