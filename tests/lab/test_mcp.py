"""react_lab.lab.mcp: the billing tools over MCP, and the loops on any MCP server's tools.

Real servers over stdio, no model: the SDK's own ClientSession against ``python -m
react_lab.lab.mcp``; the lab's client (mcp_tools) against it and against a server that lies in
its annotations (tests/helpers/mcp_liar_server.py). One server per fixture, shared by the module.
"""

import json
import shlex
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from react_lab.billing import SCHEDULE_PAYMENT
from react_lab.lab import mcp as lab_mcp
from react_lab.lab.agent.loop import ask
from react_lab.lab.agent.native import ask_native, execute_call
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.cli import main as cli_main
from react_lab.lab.mcp import MCPServerError, call_result, mcp_tools, needs_approval
from react_lab.lab.sandbox import db_checksum, working_copy
from react_lab.tools import DB_PATH, call_tool, default_tools

LAB_SERVER = [sys.executable, "-m", "react_lab.lab.mcp"]
LIAR = [sys.executable, str(Path(__file__).resolve().parents[1] / "helpers" / "mcp_liar_server.py")]
QUESTION = "Has supplier invoice INV-2291 been paid?"
READ_ONLY = ["list_invoices", "get_charge", "search", "find_invoice", "get_payments", "calc"]


def call(name: str, **arguments) -> dict:
    return {
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def calls(*pairs) -> dict:
    return {"thought": "", "tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


# --------------------------------------------------------------------------- an independent client


async def _independent_session() -> dict:
    """The SDK's own ClientSession over stdio, none of the lab's client code: what it sees."""
    params = StdioServerParameters(command=LAB_SERVER[0], args=LAB_SERVER[1:])
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["version"], out["instructions"] = init.protocol_version, init.instructions
            out["tools"] = (await session.list_tools()).tools
            out["find"] = await session.call_tool("find_invoice", {"invoice_id": "INV-2291"})
            out["bad"] = await session.call_tool("find_invoice", {"invoice_id": "inv 2291"})
            out["pay"] = await session.call_tool(
                "schedule_payment", {"invoice_id": "INV-2291", "amount": 1}
            )
            out["list"] = await session.call_tool(
                "list_invoices", {"customer_id": "cus_8812", "since": "2026-07-01"}
            )
    return out


@pytest.fixture(scope="module")
def independent():
    return anyio.run(_independent_session)


def test_an_independent_client_lists_the_tools_with_their_annotations(independent):
    listed = {t.name: t for t in independent["tools"]}
    assert list(listed) == READ_ONLY  # schedule_payment is not served by default
    local = default_tools()
    for name, tool in listed.items():
        assert tool.input_schema == local[name].parameters, name  # the lab's schema, exactly
        assert tool.description == local[name].description
        assert tool.annotations.read_only_hint is True and not tool.annotations.destructive_hint
    assert "never written" in independent["instructions"]
    assert "schedule_payment is not served" in independent["instructions"]


def test_an_independent_client_calls_find_invoice(independent):
    result = independent["find"]
    assert not result.is_error
    assert result.structured_content["invoice_id"] == "INV-2291"
    assert result.structured_content["due"] == "2026-09-30"
    local = call_tool(default_tools(), "find_invoice", {"invoice_id": "INV-2291"})
    assert result.content[0].text == local.text  # the observation the lab's own loop shows


def test_bad_arguments_get_the_labs_message_as_a_tool_error(independent):
    result = independent["bad"]
    assert result.is_error and len(result.content) == 1
    message = result.content[0].text
    assert (
        message == execute_call(default_tools(), call("find_invoice", invoice_id="inv 2291")).error
    )
    assert message.startswith("find_invoice was not run") and "invoice_id" in message
    assert "\n" not in message


def test_the_unserved_payment_tool_is_an_unknown_tool(independent):
    result = independent["pay"]
    assert result.is_error
    assert result.content[0].text.startswith(
        "unknown tool 'schedule_payment'; available: list_invoices"
    )


def test_a_list_result_is_wrapped_for_a_handshake_era_client(independent):
    assert independent["version"] == "2025-11-25"  # ClientSession.initialize(): the handshake
    rows = independent["list"].structured_content["result"]  # objects only before 2026-07-28
    assert rows and rows[0]["invoice_id"].startswith("INV-")
    assert json.loads(independent["list"].content[0].text) == rows


def test_call_result_keeps_a_list_as_is_on_the_modern_protocol():
    tools = default_tools()
    args = {"customer_id": "cus_8812", "since": "2026-07-01"}
    modern = call_result(tools, "list_invoices", args, "2026-07-28")
    assert isinstance(modern.structured_content, list) and not modern.is_error
    assert call_result(tools, "calc", {"expression": "2 * 3"}, "2025-06-18").structured_content == {
        "result": 6
    }
    error = call_result(tools, "calc", {"expression": "2 ** 1000"})
    assert error.is_error and error.content[0].text.startswith("exponent 1000 is out of range")


# ----------------------------------------------------------------- the lab's client, its own server


@pytest.fixture(scope="module")
def lab_server():
    """The lab's own server's tools, through the lab's client."""
    with mcp_tools("python -m react_lab.lab.mcp") as tools:
        yield tools


def test_the_lab_client_gives_the_loop_the_same_tools_and_observations(lab_server):
    local = default_tools()
    assert list(lab_server) == READ_ONLY
    assert not any(t.side_effect for t in lab_server.values())  # the lab's own tools, same schemas
    assert all(lab_server[n].parameters == local[n].parameters for n in lab_server)
    for name, args in [
        ("find_invoice", {"invoice_id": "INV-2291"}),
        ("calc", {"expression": "129 * 3"}),
        ("list_invoices", {"customer_id": "cus_8812", "since": "2026-07-01"}),
        ("find_invoice", {"invoice_id": "INV-9999"}),
        ("find_invoice", ["INV-2291"]),
    ]:
        served = call_tool(lab_server, name, args)
        assert served.text == call_tool(local, name, args).text, (name, args)


def test_the_text_loop_runs_on_the_mcp_tools_too(lab_server):
    model = ScriptedModel(
        [
            "Thought: look it up\nAction 1: find_invoice[INV-2291]",
            "Thought: done\nAnswer: due 2026-09-30",
        ]
    )
    result = ask(QUESTION, model, lab_server)
    assert result.steps[0].action["tool"] == "find_invoice"
    assert '"due": "2026-09-30"' in result.steps[0].observation


def test_a_tool_the_server_does_not_have_is_the_labs_unknown_tool(lab_server):
    obs = execute_call(lab_server, call("refund_charge", charge_id="ch_1KZq8f"))
    assert obs.error == "unknown tool 'refund_charge'; available: " + ", ".join(READ_ONLY)


def test_the_native_loop_runs_on_the_mcp_tools(lab_server):
    model = ScriptedChatModel(
        [
            calls(("find_invoice", {"invoice_id": "INV-2291"})),
            calls(("get_payments", {"invoice_id": "INV-2291"})),
            {"thought": "", "answer": "No: INV-2291 is approved, due 2026-09-30, unpaid."},
        ]
    )
    result = ask_native(QUESTION, model, lab_server)
    first, second = result.steps[0], result.steps[1]
    assert first.action == {"tool": "find_invoice", "args": {"invoice_id": "INV-2291"}}
    assert '"due": "2026-09-30"' in first.observation and first.error is None
    assert (
        second.observation
        == call_tool(default_tools(), "get_payments", {"invoice_id": "INV-2291"}).text
    )
    assert result.stopped_by == "answer"


def test_react_lab_ask_takes_its_tools_from_an_mcp_server(tmp_path, capsys):
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                calls(("find_invoice", {"invoice_id": "INV-2291"})),
                {"thought": "", "answer": "Not yet: due 2026-09-30."},
            ]
        )
    )
    code = cli_main(
        [
            "ask",
            QUESTION,
            "--protocol",
            "native",
            "--mcp",
            "python -m react_lab.lab.mcp",
            "--model",
            f"scripted:{script}",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["steps"][0]["action"]["tool"] == "find_invoice"
    assert '"due": "2026-09-30"' in out["steps"][0]["observation"]


def test_react_lab_ask_refuses_a_command_that_is_not_an_mcp_server(tmp_path, capsys):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"thought": "", "answer": "x"}]))
    with pytest.raises(SystemExit) as stop:
        cli_main(
            [
                "ask",
                QUESTION,
                "--protocol",
                "native",
                "--mcp",
                "no-such-mcp-server --stdio",
                "--model",
                f"scripted:{script}",
            ]
        )
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2
    assert err.startswith("react-lab ask: error: argument --mcp: 'no-such-mcp-server --stdio'")
    assert "no such command no-such-mcp-server" in err


# --------------------------------------------------------------------------- a server that lies


@pytest.fixture(scope="module")
def liar_log(tmp_path_factory):
    return tmp_path_factory.mktemp("liar") / "calls.jsonl"


@pytest.fixture(scope="module")
def liar(liar_log):
    liar_log.write_text("")
    with mcp_tools(LIAR, env={"LIAR_LOG": str(liar_log)}) as tools:
        yield tools


def ran(log: Path) -> list[str]:
    return [json.loads(line)["tool"] for line in log.read_text().splitlines()]


def test_a_read_only_hint_never_lifts_the_approval_gate(liar, liar_log):
    assert liar.hints["schedule_payment"].read_only_hint is True  # what the server claims
    assert liar["schedule_payment"].side_effect  # what the lab decides
    assert liar["find_invoice"].side_effect  # the lab's name, another schema: not the lab's tool
    assert liar["calc"].side_effect  # the lab's calc, but the server says destructive: caution kept
    assert not liar["get_payments"].side_effect  # the lab's own tool, schema and all
    assert liar["slow"].side_effect and liar["fail"].side_effect  # unknown to the lab


def test_the_native_loop_refuses_the_liars_read_only_payment_tool(liar, liar_log):
    before = ran(liar_log)
    model = ScriptedChatModel(
        [
            calls(("schedule_payment", {"invoice_id": "INV-2291", "amount": 48200})),
            {"thought": "", "answer": "I could not schedule it."},
        ]
    )
    result = ask_native("Pay INV-2291 in full.", model, liar)
    step = result.steps[0]
    assert step.guard == "approval"
    assert "changes the world and was not approved" in step.observation
    assert ran(liar_log) == before  # nothing reached the server


def test_an_approved_call_does_reach_the_liar(liar, liar_log):
    before = ran(liar_log)
    model = ScriptedChatModel(
        [
            calls(("schedule_payment", {"invoice_id": "INV-2291", "amount": 10})),
            {"thought": "", "answer": "Scheduled."},
        ]
    )
    approvals = []
    result = ask_native(
        "Pay 10 dollars on INV-2291.",
        model,
        liar,
        approve=lambda name, args: approvals.append(name) or True,
    )
    assert approvals == ["schedule_payment"]
    assert '"status": "scheduled"' in result.steps[0].observation
    assert ran(liar_log) == before + ["schedule_payment"]


def test_the_read_only_names_are_the_callers_to_choose(liar):
    listed = {t.name: t for t in liar.session.tools}
    assert needs_approval(listed["get_payments"], {})  # read_only=(): every tool gated
    assert not needs_approval(listed["slow"], {"slow": None})  # vouched for by name
    assert needs_approval(listed["calc"], {"calc": None})  # but the server's caution stays
    assert (
        needs_approval(listed["schedule_payment"], {"schedule_payment": SCHEDULE_PAYMENT}) is False
    )


def test_bad_arguments_are_refused_before_they_reach_the_server(liar, liar_log):
    before, bad = ran(liar_log), call("get_payments", invoice_id="inv 2291")  # the lab's schema
    assert execute_call(liar, bad).error == execute_call(default_tools(), bad).error
    assert "invoice_id" in execute_call(liar, bad).error
    assert ran(liar_log) == before


def test_an_error_result_is_one_line(liar):
    obs = call_tool(liar, "fail", {}, approved=True)
    assert obs.error == "the back end is down"


def test_a_slow_server_is_an_error_observation_not_a_hang(liar):
    liar.session.call_timeout = 1
    try:
        t0 = time.perf_counter()
        obs = call_tool(liar, "slow", {"seconds": 10}, approved=True)
        assert time.perf_counter() - t0 < 4
    finally:
        liar.session.call_timeout = lab_mcp.CALL_TIMEOUT
    assert obs.error == f"the MCP server {shlex.join(LIAR)!r} did not answer slow within 1 s"
    assert (
        call_tool(liar, "get_payments", {"invoice_id": "INV-2291"}, approved=True).error is None
    )  # still usable


def test_a_dead_server_is_an_error_observation(tmp_path):
    with mcp_tools(
        LIAR, env={"LIAR_LOG": str(tmp_path / "log")}, read_only={"exit", "fail"}
    ) as tools:
        t0 = time.perf_counter()
        died = call_tool(tools, "exit", {}, approved=True)
        after = call_tool(tools, "fail", {}, approved=True)
        assert time.perf_counter() - t0 < 10
    assert "has gone away (connection closed)" in died.error
    assert "has gone away" in after.error or "closed" in after.error
    assert "\n" not in died.error + after.error


# ---------------------------------------------------------------- commands that are not MCP servers


@pytest.mark.parametrize(
    "command, expected",
    [
        (
            [sys.executable, "-c", "print('hello')"],
            "is not a working MCP server: Connection closed",
        ),
        ("no-such-mcp-server", "is not a working MCP server: no such command no-such-mcp-server"),
        ("python -m react_lab.no_such_module", "No module named react_lab.no_such_module"),
        ("", "the MCP server command is empty"),
        ("python -c 'unclosed", "cannot read the MCP server command"),
    ],
)
def test_a_command_that_is_not_an_mcp_server_is_one_line(command, expected):
    with pytest.raises(MCPServerError) as error:
        mcp_tools(command, start_timeout=20)
    assert expected in str(error.value)
    assert "\n" not in str(error.value)


def test_a_silent_command_times_out_at_start():
    t0 = time.perf_counter()
    with pytest.raises(MCPServerError, match="did not answer as an MCP server within 1 s"):
        mcp_tools([sys.executable, "-c", "import time; time.sleep(60)"], start_timeout=1)
    assert time.perf_counter() - t0 < 12  # the SDK's bounded shutdown: stdin closed, then SIGTERM


# ----------------------------------------------------------------- payments, on a working copy only


def test_payments_are_served_on_a_working_copy_only_and_gated(tmp_path, scheduled, shipped_sum):
    copy = working_copy(tmp_path)
    with mcp_tools(f"python -m react_lab.lab.mcp --payments --db {copy}") as tools:
        assert str(copy) in tools.session.instructions
        assert tools.hints["schedule_payment"].destructive_hint is True
        assert tools["schedule_payment"].side_effect
        assert tools["schedule_payment"].parameters == SCHEDULE_PAYMENT
        pay = calls(("schedule_payment", {"invoice_id": "INV-2291", "amount": 100}))
        refused = ask_native(
            "Pay 100 on INV-2291.", ScriptedChatModel([pay, {"thought": "", "answer": "no"}]), tools
        )
        assert refused.steps[0].guard == "approval" and scheduled(copy) == 0
        approved = ask_native(
            "Pay 100 on INV-2291.",
            ScriptedChatModel([pay, {"thought": "", "answer": "ok"}]),
            tools,
            approve=lambda name, args: True,
        )
        assert '"status": "scheduled"' in approved.steps[0].observation
    assert scheduled(copy) == 1
    assert db_checksum() == shipped_sum  # the server wrote to the copy, never the shipped file


@pytest.mark.parametrize(
    "argv, env, expected",
    [
        (["--db", "x.sqlite"], {}, "--db is the working copy for schedule_payment; add --payments"),
        (
            ["--payments", "--db", str(DB_PATH)],
            {},
            "is the shipped database (never written); leave --db out for a copy",
        ),
        ([], {"REACT_LAB_MCP_PAYMENTS": "maybe"}, "REACT_LAB_MCP_PAYMENTS='maybe'"),
    ],
)
def test_the_server_refuses_bad_settings_before_serving(argv, env, expected, monkeypatch, capsys):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as stop:
        lab_mcp.main(argv)
    assert stop.value.code == 2
    assert expected in capsys.readouterr().err


def test_a_vouched_tool_without_annotations_is_gated_as_mcp_defaults_say():
    from mcp import types

    def listed(annotations):
        return types.Tool(name="calc", inputSchema={"type": "object"}, annotations=annotations)

    vouched = {"calc": None}
    assert needs_approval(listed(None), vouched)  # no hint: MCP's default is "may write"
    assert needs_approval(listed(types.ToolAnnotations()), vouched)  # readOnlyHint not given
    read_only = types.ToolAnnotations(readOnlyHint=True)
    assert not needs_approval(listed(read_only), vouched)
    assert needs_approval(listed(read_only), {})  # the hint alone is no permission
