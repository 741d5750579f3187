"""The agent's tools: what a tool is, how the loop calls one, and the tool set a run gets.

A :class:`Tool` bundles a function, a one-line description for the text prompt and the
JSON Schema of its arguments; the schema is the one source of truth for arguments, and
the same tool renders as ``list_invoices[customer_id, since]`` for the text protocol or
as an OpenAI function schema for native tool calling. :func:`call_tool` runs a tool and
turns whatever happens, result or error, into an :class:`Observation`; it never raises.
The functions and their schemas are in :mod:`react_lab.billing`; :func:`default_tools`
binds the read-only ones to a connection.

The shipped database (:data:`DB_PATH`) is opened read-only and never modified. The one
side-effecting tool, ``schedule_payment`` (:func:`payment_tool`), writes through the
connection it is given: one to a copy of the database
(:func:`react_lab.lab.sandbox.payment_tools` makes the copy and refuses the shipped file).
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import sqlite3
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from .billing import (
    CALC,
    DB_PATH,
    FIND_INVOICE,
    GET_CHARGE,
    GET_PAYMENTS,
    LIST_INVOICES,
    SCHEDULE_PAYMENT,
    SEARCH,
    ToolError,
    calc,
    find_invoice,
    get_charge,
    get_payments,
    list_invoices,
    schedule_payment,
    search,
)
from .protocol import unknown_tool_message
from .schema import clean_arguments

# --- the database ---------------------------------------------------------------------


def open_db(path: str | Path | None = None) -> sqlite3.Connection:
    """Open a billing database read-only (rows as sqlite3.Row); FileNotFoundError if missing."""
    path = Path(path or DB_PATH).resolve()
    if not path.is_file():
        raise FileNotFoundError(
            f"no database at {path}; build it: python -m react_lab.lab.builders.build"
        )
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    return conn


@contextmanager
def record_sql(conn: sqlite3.Connection) -> Iterator[list[str]]:
    """Yield a list collecting the SQL run on conn in the block (internal ``--`` lines skipped)."""
    statements: list[str] = []
    conn.set_trace_callback(lambda sql: None if sql.startswith("--") else statements.append(sql))
    try:
        yield statements
    finally:
        conn.set_trace_callback(None)


#: Anything written like one of the billing data's ids, in any case and of any length:
#: customers ``cus_4417``, invoices ``INV-2041``, charges ``ch_9nfKQD``, help articles
#: ``KB-01``, suppliers ``sup_106``, payments ``pay_0001`` -- and ``inv-20411`` too, which a
#: reader of free text must not take for a number. The one id pattern of the package (the
#: compaction, the guards, the scorer and the questions read it).
ID_RE = re.compile(r"\b(?:INV|KB)-\d+|\b(?:cus|sup|ch|pay)_[A-Za-z0-9]+", re.I)


# --- Tool, the tool sets, and calling a tool ---------------------------------------------


@dataclass(frozen=True)
class Tool:
    """A callable tool: function, one-line description, JSON Schema of its arguments."""

    name: str
    fn: Callable[..., Any]
    description: str
    parameters: dict
    side_effect: bool = False

    @property
    def usage(self) -> str:
        """Return the text-protocol form, e.g. 'list_invoices[customer_id, since]'."""
        return f"{self.name}[{', '.join(self.parameters['properties'])}]"

    @property
    def example(self) -> str:
        """Return a text-protocol call built from the schema's examples.

        For example ``get_charge[ch_0000]``.
        """
        props = self.parameters["properties"].values()
        return f"{self.name}[{', '.join(str(p.get('examples', ['...'])[0]) for p in props)}]"

    def openai_schema(self) -> dict:
        """Return the OpenAI function-calling form of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def default_tools(conn: sqlite3.Connection | None = None) -> dict[str, Tool]:
    """Return the six read-only tools by name, bound to conn (default: open_db())."""
    conn = open_db() if conn is None else conn
    tools = [
        Tool(
            "list_invoices",
            functools.partial(list_invoices, conn),
            "List a customer's invoices issued on or after a date (YYYY-MM-DD), newest first;"
            " totals in dollars.",
            LIST_INVOICES,
        ),
        Tool(
            "get_charge",
            functools.partial(get_charge, conn),
            "Get one card charge by id; its amount is in cents.",
            GET_CHARGE,
        ),
        Tool(
            "search",
            functools.partial(search, conn),
            "Search the billing help articles; returns the top 3 passages.",
            SEARCH,
        ),
        Tool(
            "find_invoice",
            functools.partial(find_invoice, conn),
            "Get one customer or supplier invoice by id; total in dollars.",
            FIND_INVOICE,
        ),
        Tool(
            "get_payments",
            functools.partial(get_payments, conn),
            "List the payments made on an invoice, in dollars (refunds are negative).",
            GET_PAYMENTS,
        ),
        Tool("calc", calc, "Evaluate an arithmetic expression such as 129.00 * 2.", CALC),
    ]
    return {tool.name: tool for tool in tools}


def payment_tool(conn: sqlite3.Connection) -> Tool:
    """Return ``schedule_payment`` bound to ``conn``: the one tool with a side effect.

    ``conn`` must be writable, and open on a copy of the database, never on :data:`DB_PATH`
    (:func:`react_lab.lab.sandbox.payment_tools` opens one on a copy). ``side_effect=True``
    is what the approval gate looks for.
    """
    return Tool(
        "schedule_payment",
        functools.partial(schedule_payment, conn),
        "Schedule a payment of an approved supplier invoice, in dollars. Moves real money.",
        SCHEDULE_PAYMENT,
        side_effect=True,
    )


def tool_schemas(tools: dict[str, Tool] | list[Tool]) -> list[dict]:
    """Return the OpenAI function schemas of the tools (a dict's values or a list)."""
    return [tool.openai_schema() for tool in (tools.values() if isinstance(tools, dict) else tools)]


def declared(tools: dict[str, Tool]) -> dict[str, dict]:
    """Each tool's name and its parameters' schemas: what the parser checks a call against
    (and reads a value written as text by, :func:`react_lab.lab.agent.parser.parse`)."""
    return {name: dict(tool.parameters.get("properties", {})) for name, tool in tools.items()}


@dataclass
class Observation:
    """What a tool call produced, as the loop will show it to the model.

    ``guard`` names the guard that acted on the call (one of
    :data:`react_lab.lab.guards.GUARD_NAMES`, or None); ``timed_out`` is True when the call
    was cut off at the guards' ``tool_timeout``; ``seconds`` is the call's wall-clock
    time, guards included.
    """

    text: str  # what follows "Observation:" -- JSON, or "Error: ..."
    error: str | None = None
    value: Any = None  # the raw return value when the call succeeded
    sql: list[str] = field(default_factory=list)
    guard: str | None = None
    timed_out: bool = False
    seconds: float = 0.0

    @classmethod
    def failure(cls, message: str, **fields) -> "Observation":
        """The observation of a call that did not work: ``Error: message``, message in ``error``.

        The one builder of error observations; ``fields`` set the rest (``guard``, ``sql`` ...).
        """
        return cls(f"Error: {message}", error=message, **fields)


def call_tool(
    tools: dict[str, Tool], name: str, args: list[str] | dict, *, approved: bool = False
) -> Observation:
    """Run tools[name] with args (list: positional, dict: keywords); never raises.

    The observation is the result as JSON, or a text result as it is. A side-effecting tool
    runs only when ``approved``: the loops' approval gate (:meth:`react_lab.lab.agent.guards.Watch.
    run_tool`) passes it for a call its approver said yes to; otherwise nothing runs.
    """
    try:
        return _call(tools, name, args, approved)
    except BaseException as e:  # noqa: BLE001 -- a broken call must become an observation
        if isinstance(e, KeyboardInterrupt):  # the learner stopping the run is not the tool's error
            raise
        return Observation.failure(f"{type(e).__name__}: {e}")


def _call(tools: dict[str, Tool], name: str, args: list[str] | dict, approved: bool) -> Observation:
    """Run one tool call; errors from the tool become error observations."""
    if not isinstance(tools, Mapping):
        return Observation.failure(f"no tools to run {name} with: tools is {tools!r:.40}")
    tool = tools.get(name)
    if tool is None:
        return Observation.failure(unknown_tool_message(name, tools))
    if tool.side_effect and not approved:  # never without approval, whoever calls
        return Observation.failure(
            f"{name} changes the world and was not approved, so it did not run; a loop "
            "runs it when its approver says yes (Guards(approve=...))",
            guard="approval",
        )
    args = [args] if isinstance(args, str) else args
    if not isinstance(args, (list, tuple, dict)):
        return Observation.failure(
            f"{tool.name} was not run: its arguments must be a list of values or an "
            f"object of named values, not {type(args).__name__}. Write {tool.usage}"
        )
    args, errors = clean_arguments(tool, args)  # the argument rule: no tool sees "INV-2041\n"
    if errors:
        return Observation.failure(f"{tool.name} was not run: {'; '.join(errors)}")
    positional, keywords = ((), dict(args)) if isinstance(args, dict) else (tuple(args), {})
    try:
        inspect.signature(tool.fn).bind(*positional, **keywords)
    except TypeError as exc:
        params = list(tool.parameters["properties"])
        if set(keywords) <= set(params) and len(positional) + len(keywords) == len(params):
            return Observation.failure(  # the call fits the schema: the function does not
                f"{tool.name} is broken: its function does not take the arguments its schema "
                f"declares ({exc}); the call was right, nothing ran"
            )
        got = f"got {', '.join(keywords) or 'none'}" if keywords else f"got {len(positional)}"
        return Observation.failure(
            f"{tool.name} takes {len(params)} argument{'s' * (len(params) != 1)}"
            f" ({', '.join(params)}); {got}. Write {tool.usage}"
        )
    conn = connection(tool)
    with record_sql(conn) if conn is not None else nullcontext([]) as sql:
        try:
            value = tool.fn(*positional, **keywords)
        except ToolError as e:
            return Observation.failure(str(e), sql=list(sql))
        except sqlite3.Error as e:
            message = f"database error in {tool.name}: {e}; check the arguments"
            return Observation.failure(message, sql=list(sql))
        except BaseException as e:  # noqa: BLE001 -- TypeError, ..., and sys.exit() in the tool
            if isinstance(e, KeyboardInterrupt):
                raise
            failed = f"{tool.name} failed with {type(e).__name__}: {e}"
            message = f"{failed}; check the arguments of {tool.usage}"
            return Observation.failure(message, sql=list(sql))
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return Observation(text, value=value, sql=sql)  # text (a page, an email) as is: line breaks too


def connection(tool: Tool | None) -> sqlite3.Connection | None:
    """Return the sqlite3 connection a tool's function is bound to (``partial(fn, conn)``).

    None when it is bound to none.
    """
    bound = getattr(getattr(tool, "fn", None), "args", ())
    return bound[0] if bound and isinstance(bound[0], sqlite3.Connection) else None
