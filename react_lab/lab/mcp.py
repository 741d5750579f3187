"""The billing tools over the Model Context Protocol (MCP), and any MCP server's tools for the
loops.

MCP is how tools are declared today: a server lists each tool's name, description, JSON
Schema and *annotations* (``readOnlyHint``, ``destructiveHint``), and any client calls it.
This module is both sides, on the official ``mcp`` SDK (2.x):

* ``python -m react_lab.lab.mcp`` serves the six read-only tools of
  :func:`react_lab.tools.default_tools` over stdio, each with the lab's own JSON Schema and
  ``readOnlyHint``; with ``--payments`` (or ``REACT_LAB_MCP_PAYMENTS=1``) also
  ``schedule_payment``, marked ``destructiveHint``, on a :func:`react_lab.lab.sandbox.working_copy`
  -- never the shipped database. Off by default: a server offers what a client needs.
  Arguments are checked with the lab's own check before a tool runs; a tool error comes
  back as an error result (``isError``) holding the lab's one-line message.
* :func:`mcp_tools` starts any MCP server over stdio and returns its tools as
  :class:`react_lab.tools.Tool` objects that :func:`react_lab.lab.agent.native.run_native` (and the
  text loop) use unchanged; the calls go through one session kept on a background thread.

The trust boundary: an annotation is the *server's* claim about its tool, a hint, never a
permission. Whether a tool is side-effecting (``Tool.side_effect``, which puts it behind the
approval gate of :class:`react_lab.lab.agent.guards.Guards`) is decided here, in the client: only a
tool the lab vouches for -- by default one of its own read-only tools, same name and same schema,
and marked ``readOnlyHint`` by the server -- runs without approval; a tool with no annotations is
gated (MCP's defaults say it may write), and so is one the server marks destructive. A
``readOnlyHint`` alone never removes the gate.

A learner's own MCP client (an editor, a desktop assistant) runs the same server with::

    {"mcpServers": {"react-lab": {"command": "/path/to/.venv/bin/python",
                                  "args": ["-m", "react_lab.lab.mcp"]}}}
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import concurrent.futures
import inspect
import json
import logging
import os
import shlex
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Sequence

import anyio
import mcp.types as types  # the SDK: imports are absolute, so this is never this module
from mcp import Client, StdioServerParameters, stdio_client
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from ..billing import ToolError
from ..protocol import clip
from ..schema import schema_validator
from ..tools import Tool, default_tools, open_db
from .agent.native import execute_call
from .sandbox import is_shipped, payment_tools, working_copy

#: The environment variable that serves ``schedule_payment`` (on a working copy): 1/0.
PAYMENTS_ENV = "REACT_LAB_MCP_PAYMENTS"
SERVER_NAME = "react-lab-billing"

#: Seconds a server may take to start and list its tools (importing the SDK takes ~3 s).
START_TIMEOUT = 30.0
#: Seconds one tool call may take before it becomes an error observation.
CALL_TIMEOUT = 30.0
#: Seconds to wait for the session to close (the SDK's own shutdown is bounded by ~6 s).
CLOSE_TIMEOUT = 10.0


# --------------------------------------------------------------------------- the server


def served_tools(db: str | Path | None = None) -> dict[str, Tool]:
    """The tools ``python -m react_lab.lab.mcp`` serves: the six read-only ones, and with ``db``
    (a working copy; :func:`react_lab.lab.sandbox.payment_tools` refuses the shipped file)
    ``schedule_payment`` writing to it."""
    return {**default_tools(), **(payment_tools(db) if db is not None else {})}


def annotations(tool: Tool) -> types.ToolAnnotations:
    """The MCP annotations the lab's server declares for one of its tools (hints for clients)."""
    if tool.side_effect:
        return types.ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=False
        )
    return types.ToolAnnotations(read_only_hint=True, open_world_hint=False)


def listing(tools: Mapping[str, Tool]) -> list[types.Tool]:
    """The ``tools/list`` entries: name, description, the lab's JSON Schema as is, annotations."""
    return [
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=t.parameters,
            annotations=annotations(t),
        )
        for t in tools.values()
    ]


def call_result(
    tools: Mapping[str, Tool],
    name: str,
    arguments: dict | None,
    protocol_version: str | None = None,
) -> types.CallToolResult:
    """Run one ``tools/call`` the lab's way; never raises.

    The call goes through :func:`react_lab.lab.agent.native.execute_call`: an unknown tool, or
    arguments that fail :func:`react_lab.schema.check_arguments`, are refused before
    anything runs, with the messages the native loop gives. An error is an ``isError``
    result whose one text block is the lab's one-line message. A result is its
    observation text (compact JSON) plus ``structuredContent``: the value itself, or
    ``{"result": value}`` for a list or number where the protocol version allows only
    objects there (before 2026-07-28).
    """
    call = {"function": {"name": name, "arguments": arguments or {}}}
    # approved: an MCP client sends a call its user approved (destructiveHint asks it to)
    obs = execute_call(dict(tools), call, approved=True)
    if obs.error is not None:
        return types.CallToolResult(content=[types.TextContent(text=obs.error)], is_error=True)
    value = obs.value
    if isinstance(value, str) or value is None:
        structured = None  # text (a page) is its own content
    elif isinstance(value, dict) or protocol_version in MODERN_PROTOCOL_VERSIONS:
        structured = value
    else:
        structured = {"result": value}
    return types.CallToolResult(
        content=[types.TextContent(text=obs.text)], structured_content=structured
    )


def build_server(tools: Mapping[str, Tool], instructions: str | None = None) -> Server:
    """The low-level MCP server for ``tools``.

    It lists the lab's schemas exactly and checks calls itself.
    """
    entries = listing(tools)

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=entries)

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        # The tools are fast SQLite reads on one connection: run them in turn, on the loop.
        return call_result(tools, params.name, params.arguments, ctx.protocol_version)

    return Server(
        SERVER_NAME,
        instructions=instructions,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def server_instructions(db: str | Path | None) -> str:
    """What the server tells every client about itself (``instructions``): data, writes, hints."""
    writes = (
        f"schedule_payment writes only to a working copy, {db}; "
        if db is not None
        else f"schedule_payment is not served (start the server with --payments or "
        f"{PAYMENTS_ENV}=1 to serve it on a working copy); "
    )
    return (
        "Billing tools of react_lab on its SQLite billing database: invoice totals and "
        "payments in dollars, card charges in cents. The shipped database is opened "
        f"read-only and never written; {writes}the annotations are hints: your client "
        "decides what needs approval."
    )


def _flag(name: str) -> bool:
    """Read an on/off environment variable; ValueError naming it for any other value."""
    text = os.environ.get(name, "").strip().lower()
    if text not in ("", "0", "false", "no", "off", "1", "true", "yes", "on"):
        raise ValueError(
            f"{name}={os.environ[name]!r}: use 1 to serve schedule_payment or 0 not to"
        )
    return text in ("1", "true", "yes", "on")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m react_lab.lab.mcp [--payments] [--db PATH]``.

    Serve the billing tools over stdio.
    """
    p = argparse.ArgumentParser(
        prog="python -m react_lab.lab.mcp", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--payments",
        action="store_true",
        default=None,
        help=f"also serve schedule_payment on a working copy (or set {PAYMENTS_ENV}=1)",
    )
    p.add_argument(
        "--db",
        default=None,
        help="the working copy schedule_payment writes to "
        "(default: a fresh copy in a temporary folder); never the shipped database",
    )
    args = p.parse_args(argv)
    try:
        payments = args.payments or _flag(PAYMENTS_ENV)
        if args.db is not None and not payments:
            raise ValueError("--db is the working copy for schedule_payment; add --payments")
        if args.db is not None and Path(args.db).is_file() and is_shipped(args.db):
            raise ValueError(
                f"--db {args.db} is the shipped database (never written); leave --db out for a copy"
            )
        db = (Path(args.db) if args.db is not None else working_copy()) if payments else None
        tools = served_tools(db)
    except (ValueError, FileNotFoundError, ToolError) as exc:
        p.error(str(exc))
    for tool in tools.values():
        schema_validator(tool.parameters)  # jsonschema's import (seconds) before the first call
    instructions = server_instructions(db)
    print(f"{SERVER_NAME}: serving {', '.join(tools)}. {instructions}", file=sys.stderr)
    server = build_server(tools, instructions)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)
    return 0


# --------------------------------------------------------------------------- the client


class MCPServerError(RuntimeError):
    """An MCP server that cannot be started, listed or reached; the message is one line."""


def server_command(command: str | Sequence[str]) -> list[str]:
    """The argv for a server command (a string is split as a shell would).

    A bare ``python`` or ``python3`` is this interpreter (``sys.executable``), so
    ``"python -m react_lab.lab.mcp"`` runs the lab that is running, whatever ``PATH`` says.
    """
    try:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    except ValueError as exc:
        raise MCPServerError(f"cannot read the MCP server command {command!r}: {exc}") from None
    if not argv:
        raise MCPServerError(
            "the MCP server command is empty; give one such as 'python -m react_lab.lab.mcp'"
        )
    if argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return argv


class MCPSession:
    """One MCP client session with a server over stdio, kept alive on a background thread.

    The SDK is async; the loops are not. The session lives on an event loop in a daemon
    thread, and :meth:`call` hands each request to it, waiting at most ``call_timeout``
    seconds. :meth:`close` (also at exit) ends the session and the server process. The
    server's stderr goes to a temporary file; its last line is quoted when the server fails.
    Raises :class:`MCPServerError` when the server does not start or list its tools within
    ``start_timeout`` seconds.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        start_timeout: float = START_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
    ):
        self.argv = server_command(command)
        self.label = command if isinstance(command, str) else shlex.join(self.argv)
        self.call_timeout = call_timeout
        self.tools: list[types.Tool] = []
        self.instructions: str | None = None
        self._client: Client | None = None
        self._closed = False
        self._stop = asyncio.Event()
        self._done = threading.Event()
        self._ready: concurrent.futures.Future = concurrent.futures.Future()
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        # The SDK logs a server's non-JSON output with a traceback; the error message says it once.
        sdk_log = logging.getLogger("mcp")
        if not sdk_log.handlers:
            sdk_log.addHandler(logging.NullHandler())
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="mcp-client", daemon=True
        )
        self._thread.start()
        params = StdioServerParameters(
            command=self.argv[0], args=self.argv[1:], env=dict(env) if env else None, cwd=cwd
        )
        self._main = asyncio.run_coroutine_threadsafe(self._hold(params), self._loop)
        atexit.register(self.close)
        try:
            self.tools = self._ready.result(timeout=start_timeout)
        except Exception as exc:  # noqa: BLE001 -- whatever failed, one line that says so
            why = (
                f"did not answer as an MCP server within {start_timeout:g} s"
                if isinstance(exc, concurrent.futures.TimeoutError)
                else f"is not a working MCP server: {_reason(exc)}"
            )
            why += self._stderr_tail()
            self.close()
            raise MCPServerError(f"{self.label!r} {why}") from None

    async def _hold(self, params: StdioServerParameters) -> None:
        """Open the session, list the tools, then hold the session open until close()."""
        try:
            transport = stdio_client(params, errlog=self._errlog)
            async with Client(
                transport, read_timeout_seconds=self.call_timeout, cache=None
            ) as client:
                page = await client.list_tools()
                tools = list(page.tools)
                while page.next_cursor:  # a server may page its listing
                    page = await client.list_tools(cursor=page.next_cursor)
                    tools += page.tools
                self._client, self.instructions = client, client.instructions
                self._ready.set_result(tools)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self._done.set()

    def call(self, name: str, arguments: dict) -> types.CallToolResult:
        """Send one ``tools/call`` and wait for its result.

        :class:`MCPServerError` if none comes.
        """
        if self._closed or self._client is None:
            raise MCPServerError(f"the MCP session with {self.label!r} is closed")
        future = asyncio.run_coroutine_threadsafe(
            self._client.call_tool(name, arguments, read_timeout_seconds=self.call_timeout),
            self._loop,
        )
        late = MCPServerError(
            f"the MCP server {self.label!r} did not answer {name} within {self.call_timeout:g} s"
        )
        try:
            return future.result(timeout=self.call_timeout + 2)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise late from None
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                raise late from None
            if exc.code == types.CONNECTION_CLOSED:
                raise MCPServerError(
                    f"the MCP server {self.label!r} has gone away (connection "
                    f"closed){self._stderr_tail()}"
                ) from None
            raise MCPServerError(
                f"the MCP server {self.label!r} refused {name}: {_collapsed(exc.message)}"
            ) from None
        except Exception as exc:  # noqa: BLE001 -- a reply the SDK could not read, a dead loop
            raise MCPServerError(
                f"calling {name} on {self.label!r} failed: {_reason(exc)}"
            ) from None

    def close(self) -> None:
        """End the session and the server process; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        if self._ready.done() and self._ready.exception() is None:
            self._loop.call_soon_threadsafe(self._stop.set)
        else:
            self._main.cancel()  # still starting: cancel the handshake
        self._done.wait(CLOSE_TIMEOUT)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()
        self._errlog.close()

    def _stderr_tail(self) -> str:
        """``; it wrote: <last stderr line>``, or '' when the server wrote nothing."""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            lines = [ln.strip() for ln in self._errlog.read().splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return f"; it wrote: {clip(lines[-1], 200)}" if lines else ""


def _reason(exc: BaseException) -> str:
    """One line for an exception, from inside the task groups that wrap it."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return _collapsed(exc.message)
    if isinstance(exc, FileNotFoundError):
        return f"no such command {exc.filename or ''}".strip()
    return _collapsed(f"{type(exc).__name__}: {exc}")


def _collapsed(text: str, limit: int = 600) -> str:
    """A server's text on one line: each run of whitespace (line breaks, a docstring's
    indentation) as one space, the ends stripped, then clipped to ``limit``."""
    return clip(" ".join(str(text).split()), limit)


# --------------------------------------------------------------------------- the policy


def lab_read_only() -> dict[str, dict]:
    """The tools the lab knows as read-only: name -> its JSON Schema (from default_tools)."""
    conn = open_db()
    try:
        return {name: tool.parameters for name, tool in default_tools(conn).items()}
    finally:
        conn.close()


def needs_approval(tool: types.Tool, vouched: Mapping[str, dict | None]) -> bool:
    """Whether a listed tool goes behind the approval gate: decided by the client, not the server.

    A tool runs without approval only when ``vouched`` names it (with a schema, the
    server's ``input_schema`` must be that schema exactly) and the server marks it
    read-only too (``readOnlyHint`` true, ``destructiveHint`` not true). A tool with no
    annotations is gated: MCP's defaults for a missing hint are "may write" and
    "destructive", and caution the server adds or leaves in place is kept. A
    ``readOnlyHint`` alone is not enough: a hint from the server is not a permission.
    """
    if tool.name not in vouched:
        return True
    schema = vouched[tool.name]
    if schema is not None and tool.input_schema != json.loads(json.dumps(schema)):
        return True  # same name, another tool: what it does is the server's word only
    hints = tool.annotations
    if hints is None or hints.read_only_hint is not True:  # MCP's default: it may write
        return True
    return hints.destructive_hint is True


def _vouched(read_only: Mapping[str, dict] | Collection[str] | None) -> dict[str, dict | None]:
    """``read_only`` as name -> schema (None: any schema).

    ``read_only`` None means the lab's own read-only tools.
    """
    if read_only is None:
        return lab_read_only()
    if isinstance(read_only, Mapping):
        return dict(read_only)
    if isinstance(read_only, str):
        raise TypeError(
            "read_only must be a collection of tool names or a dict name -> schema, not a str"
        )
    return {name: None for name in read_only}


# --------------------------------------------------------------------------- the tools


class MCPTools(dict):
    """The tools one MCP server lists, by name, as :class:`react_lab.tools.Tool` objects.

    A dict the loops take as it is, plus ``session`` (the :class:`MCPSession`; close it,
    or use the dict as a context manager) and ``hints`` (each tool's annotations as the
    server declared them: shown, never trusted).
    """

    def __init__(
        self,
        tools: Mapping[str, Tool],
        session: MCPSession,
        hints: Mapping[str, types.ToolAnnotations | None],
    ):
        super().__init__(tools)
        self.session = session
        self.hints = dict(hints)

    def close(self) -> None:
        """End the session and the server process."""
        self.session.close()

    def __enter__(self) -> "MCPTools":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def mcp_tools(
    command: str | Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    read_only: Mapping[str, dict] | Collection[str] | None = None,
    start_timeout: float = START_TIMEOUT,
    call_timeout: float = CALL_TIMEOUT,
) -> MCPTools:
    """Start the MCP server ``command`` over stdio; return its tools for the loops.

    ``command``: a string split as a shell would (``"python -m react_lab.lab.mcp"``) or an argv
    list; ``env`` is added to the few variables the SDK passes on (``PATH``, ``HOME``...).
    Each tool's ``parameters`` is the server's ``input_schema``; calling it sends
    ``tools/call`` through the one session. The observation is the result's
    ``structuredContent`` as JSON when given, else its text; an ``isError`` result, a
    server that died or did not answer within ``call_timeout`` seconds is an error
    observation (:class:`react_lab.billing.ToolError`), never a hang. ``side_effect`` is
    :func:`needs_approval` with ``read_only`` (default: the lab's own read-only tools by
    name and schema; ``()`` gates every tool). Pointing the lab at a server is itself trust:
    one that served a payment as ``find_invoice`` with the lab's schema would run ungated,
    so pass ``read_only=()`` for a server you do not trust. Raises :class:`MCPServerError`
    (one line) when the command is not an MCP server that lists tools. Close the result.
    """
    session = MCPSession(
        command, env=env, cwd=cwd, start_timeout=start_timeout, call_timeout=call_timeout
    )
    try:
        if not session.tools:
            raise MCPServerError(f"the MCP server {session.label!r} lists no tools")
        vouched = _vouched(read_only)
        tools = {t.name: remote_tool(session, t, needs_approval(t, vouched)) for t in session.tools}
    except BaseException:
        session.close()
        raise
    return MCPTools(tools, session, {t.name: t.annotations for t in session.tools})


def remote_tool(session: MCPSession, listed: types.Tool, side_effect: bool) -> Tool:
    """A :class:`Tool` whose function calls ``listed`` through ``session``."""
    schema = listed.input_schema if isinstance(listed.input_schema, dict) else {}
    parameters = {"type": "object", "properties": {}, **schema}  # a tool may declare none
    description = _collapsed(listed.description or listed.title or listed.name, 1000)
    return Tool(
        listed.name,
        _remote_function(session, listed.name, parameters),
        description,
        parameters,
        side_effect=side_effect,
    )


def _remote_function(session: MCPSession, name: str, schema: dict) -> Callable[..., Any]:
    """A function with the schema's parameters that sends its arguments to the server.

    The required parameters come first. The signature lets :func:`react_lab.tools.call_tool`
    bind positional arguments (the text protocol's) and report a wrong count as it does for
    the lab's own tools.
    """
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = [p for p in props if p in (schema.get("required") or [])]
    optional = [p for p in props if p not in required]
    try:
        # bind() leaves an argument not given out: no None is sent
        signature = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in required]
            + [
                inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
                for p in optional
            ]
        )
        keywords_only = False
    except ValueError:  # a property name that is no Python identifier (or a keyword): by name only
        signature = inspect.Signature(
            [inspect.Parameter("mcp_arguments", inspect.Parameter.VAR_KEYWORD)]
        )
        keywords_only = True

    def call(*args, **kwargs):
        bound = signature.bind(*args, **kwargs).arguments
        arguments = bound.get("mcp_arguments", {}) if keywords_only else bound
        return tool_value(session, name, dict(arguments))

    call.__signature__ = signature
    call.__name__ = call.__qualname__ = f"mcp_{name}" if name.isidentifier() else "mcp_tool"
    return call


def tool_value(session: MCPSession, name: str, arguments: dict) -> Any:
    """Call a tool over MCP: its structuredContent, else its text; ToolError for any failure."""
    try:
        result = session.call(name, arguments)
    except MCPServerError as exc:
        raise ToolError(str(exc)) from None
    text = "\n".join(_block_text(block) for block in result.content)
    if result.is_error:
        said = _collapsed(text)
        raise ToolError(said or f"{name} failed on the MCP server and said nothing more")
    if result.structured_content is not None:
        return result.structured_content  # call_tool writes it as JSON, as for the lab's own tools
    return text


def _block_text(block: Any) -> str:
    """A content block as text: its text, or what it is (an image, a resource) when it has none."""
    if isinstance(block, types.TextContent):
        return block.text
    kind, mime_type = getattr(block, "type", "other"), getattr(block, "mime_type", None)
    return f"[{kind} content: {mime_type or 'not shown'}]"


if __name__ == "__main__":
    sys.exit(main())
