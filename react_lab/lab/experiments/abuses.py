"""Three argument abuses fed to three defences: the classic regex, a JSON Schema, a grammar.

A tool call goes wrong in three ways: an argument is *malformed*, a required one is
*missing*, or one nobody declared is added (*undeclared*). Each :class:`Abuse` is written
twice -- as the text protocol's action and as the JSON arguments a native call carries --
and meets three defences:

* ``regex`` -- the classic loop: :func:`strict_parse`, a split on commas,
  ``tool.fn(*args)``. Nothing checks the arguments; we record the SQL that ran.
* ``schema`` -- JSON Schema validation of the structured call
  (:func:`react_lab.schema.check_arguments`).
* ``grammar`` -- schema-constrained decoding: the native loop's reply grammar, run through
  llama.cpp's own grammar sampler (:func:`react_lab.lab.backends.grammar.grammar_check`). A call the
  grammar refuses can never be generated.

Outcomes: ``wrong_call`` (ran and returned misleading rows), ``type_error`` (Python raised
TypeError; the classic loop has no ``try``, so the run crashes), ``rejected`` (an error that
names the field), ``impossible`` (cannot be generated), ``ok``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ...messages import SYSTEM
from ...protocol import ACTION_RE, ParseResult
from ...schema import check_arguments
from ...tools import Tool, connection, default_tools, open_db, record_sql, tool_schemas
from ..backends.grammar import grammar_check, reply_grammar


def strict_parse(text: str) -> ParseResult:
    """Parse as the classic loop does: ``"Answer:" in text`` first, then the seed's regex.

    The regex is :data:`react_lab.protocol.ACTION_RE`, used as it is. No tolerance at all:
    numbered labels, ``Action Input:`` lines, JSON and trailing text after ``]`` are all parse
    errors. Never raises.
    """
    text = text if isinstance(text, str) else str(text)
    if "Answer:" in text:
        return ParseResult("final", answer=text.split("Answer:", 1)[1].strip(), dialect="strict")
    match = ACTION_RE.search(text)
    if not match:
        return ParseResult("error", reason="Could not parse an action. Retry.", dialect="strict")
    return ParseResult("action", tool=match.group(1), input=match.group(2), dialect="strict")


DEFENCES = ("regex", "schema", "grammar")
OUTCOMES = ("wrong_call", "type_error", "rejected", "impossible", "ok")
JULY = {"customer_id": "cus_8812", "since": "2026-07-01"}


@dataclass(frozen=True)
class Abuse:
    """One bad tool call, as text (``action``) and as native ``arguments`` (a JSON string).

    ``intended`` is what the caller meant, to tell a silently wrong result from a right
    one. ``invitation`` is a user message that asks for the abuse, to sample from a model.
    """

    kind: str
    name: str
    tool: str
    action: str
    arguments: str
    intended: dict
    invitation: str

    @property
    def label(self) -> str:
        return f"{self.kind}: {self.name}"


ABUSES: tuple[Abuse, ...] = (
    Abuse(
        "malformed",
        "missing comma",
        "list_invoices",
        "list_invoices[cus_8812 2026-07-01]",
        '{"customer_id": "cus_8812" "since": "2026-07-01"}',
        JULY,
        "Call list_invoices with exactly these arguments: cus_8812 2026-07-01",
    ),
    Abuse(
        "malformed",
        "date in words",
        "list_invoices",
        "list_invoices[cus_8812, July 1st]",
        '{"customer_id": "cus_8812", "since": "July 1st"}',
        JULY,
        "List the invoices of cus_8812 issued since July 1st.",
    ),
    Abuse(
        "malformed",
        "comma inside an argument",
        "search",
        "search[refunds, duplicates]",
        '{"query": "refunds, duplicates"}',
        {"query": "refunds, duplicates"},
        "Search the help articles for: refunds, duplicates",
    ),
    Abuse(
        "missing",
        "required argument left out",
        "list_invoices",
        "list_invoices[cus_8812]",
        '{"customer_id": "cus_8812"}',
        JULY,
        "List the invoices of cus_8812. Pass only the customer id.",
    ),
    Abuse(
        "undeclared",
        "extra argument",
        "list_invoices",
        "list_invoices[cus_8812, 2026-07-01, include_deleted]",
        '{"customer_id": "cus_8812", "since": "2026-07-01", "include_deleted": true}',
        JULY,
        "List the invoices of cus_8812 since 2026-07-01 with include_deleted set to true.",
    ),
    Abuse(
        "undeclared",
        "extra argument in a declared slot",
        "list_invoices",
        "list_invoices[cus_8812, include_deleted]",
        '{"customer_id": "cus_8812", "include_deleted": true}',
        JULY,
        "List the invoices of cus_8812, include_deleted.",
    ),
)


@dataclass
class Outcome:
    """What one defence made of one abuse; ``sql`` and ``rows`` are set when a tool ran."""

    abuse: str
    defence: str
    outcome: str
    detail: str
    sql: list[str] = field(default_factory=list)
    rows: Any = None
    sampled: dict | None = None

    def to_dict(self) -> dict:
        """The CLI's shape: ``{"abuse", "defence", "outcome", "detail"}``."""
        keys = ("abuse", "defence", "outcome", "detail")
        return {k: v for k, v in asdict(self).items() if k in keys}


# --------------------------------------------------------------------------- the defences


def regex_defence(abuse: Abuse, tools: dict[str, Tool]) -> Outcome:
    """Run the abuse the classic way: match ACTION_RE, split on commas, call ``tool.fn(*args)``."""
    parsed = strict_parse(f"Action: {abuse.action}")
    if parsed.kind != "action":
        return Outcome(abuse.label, "regex", "rejected", parsed.reason or "no action")
    args = [a.strip() for a in parsed.input.split(",")]
    tool = tools[parsed.tool]
    with record_sql(connection(tool)) as sql:
        try:
            rows = tool.fn(*args)
        except TypeError as exc:
            return Outcome(
                abuse.label,
                "regex",
                "type_error",
                f"{parsed.tool}(*{args}) raised TypeError: {exc}",
                list(sql),
            )
    intended = tool.fn(**abuse.intended)
    if rows == intended:
        return Outcome(
            abuse.label,
            "regex",
            "ok",
            f"{parsed.tool}(*{args}) returned what was meant ({_count(rows)})",
            list(sql),
            rows,
        )
    return Outcome(
        abuse.label,
        "regex",
        "wrong_call",
        f"{parsed.tool}(*{args}) ran {_where(sql)} and returned {_count(rows)}; "
        f"the intended call returns {_count(intended)}",
        list(sql),
        rows,
    )


def schema_defence(abuse: Abuse, tools: dict[str, Tool]) -> Outcome:
    """Decode the native arguments and validate them against the tool's JSON Schema."""
    args, errors = check_arguments(tools[abuse.tool], abuse.arguments)
    if errors:
        return Outcome(abuse.label, "schema", "rejected", "; ".join(errors))
    return Outcome(
        abuse.label,
        "schema",
        "ok",
        f"valid: {abuse.tool}({json.dumps(args)}); "
        "a comma inside a JSON string is just a character",
    )


def reply_text(abuse: Abuse) -> str:
    """The whole native reply that would carry the abuse.

    ``{"thought": "", "tool_calls": [...]}``.
    """
    call = f'{{"name": "{abuse.tool}", "arguments": {abuse.arguments}}}'
    return f'{{"thought": "", "tool_calls": [{call}]}}'


def grammar_defence(abuse: Abuse, tools: dict[str, Tool], *, model=None) -> Outcome:
    """Check the abusive reply against the reply grammar with llama.cpp's grammar sampler.

    With ``model`` (a :class:`react_lab.lab.backends.chat.LocalChatModel`), also sample one reply to
    :attr:`Abuse.invitation` under the grammar (``tool_choice="required"``) and report
    the call the model wrote and whether it passes the schema.
    """
    text = reply_text(abuse)
    check = grammar_check(reply_grammar(tool_schemas(tools)), text)
    if check.accepted:
        out = Outcome(abuse.label, "grammar", "ok", "the grammar accepts this call")
    else:
        at = check.at - text.index(abuse.arguments)  # offset inside the arguments
        what = f"refuses {check.char!r}" if check.char else "refuses to end"
        out = Outcome(
            abuse.label,
            "grammar",
            "impossible",
            f"the grammar {what} at character {at} of the arguments: {abuse.arguments[:at]}⟨here⟩",
        )
    if model is not None:
        out.sampled = sample_call(abuse, model, tools)
        s = out.sampled
        out.detail += f"; sampled: {s['tool']}({json.dumps(s['args'])}) -- " + (
            "schema-valid" if s["valid"] else "INVALID: " + "; ".join(s["errors"])
        )
    return out


def sample_call(abuse: Abuse, model, tools: dict[str, Tool]) -> dict:
    """Ask the model for the abuse in words.

    Returns ``{"tool", "args", "valid", "errors", "text"}``.
    """
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": abuse.invitation},
    ]
    reply = model.chat(messages, tools=tool_schemas(tools), max_tokens=160, tool_choice="required")
    if not reply.tool_calls:
        return {
            "tool": None,
            "args": None,
            "valid": False,
            "text": reply.text,
            "errors": [f"no call (finish_reason={reply.finish_reason})"],
        }
    call = reply.tool_calls[0]["function"]
    name = call["name"]
    args, errors = check_arguments(tools[name], call["arguments"])
    return {"tool": name, "args": args, "valid": not errors, "errors": errors, "text": reply.text}


def run_abuses(
    abuses=ABUSES, defences=DEFENCES, *, tools: dict[str, Tool] | None = None, model=None
) -> list[Outcome]:
    """Feed every abuse to every defence; return the outcomes, abuse by abuse.

    The ``grammar`` defence loads the embedded model (it needs its vocabulary); with
    ``model`` (a chat backend) it also samples one call per abuse (a few seconds each).
    """
    tools = default_tools(open_db()) if tools is None else tools
    outcomes = []
    for abuse in abuses:
        for defence in defences:
            if defence == "regex":
                outcomes.append(regex_defence(abuse, tools))
            elif defence == "schema":
                outcomes.append(schema_defence(abuse, tools))
            elif defence == "grammar":
                outcomes.append(grammar_defence(abuse, tools, model=model))
            else:
                raise ValueError(f"unknown defence {defence!r}; use {', '.join(DEFENCES)}")
    return outcomes


def _count(rows) -> str:
    return f"{len(rows)} row{'s' * (len(rows) != 1)}" if isinstance(rows, list) else "a value"


def _where(sql: list[str]) -> str:
    last = sql[-1] if sql else ""
    # the outer query's WHERE is the last one (list_invoices has a sub-select before it)
    if " WHERE " not in last:
        return repr(last)
    return "WHERE " + last.rsplit(" WHERE ", 1)[1].split(" ORDER BY")[0]


# --------------------------------------------------------------------------- showing them


# --------------------------------------------------------------------------- the CLI
