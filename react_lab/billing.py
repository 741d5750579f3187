"""The billing tools: five read-only functions over the SQLite billing database, ``calc``, and
``schedule_payment``, the one that writes; each with the JSON Schema of its arguments.

Each is a plain function, all but ``calc`` with the database connection first
(:func:`react_lab.tools.default_tools` and :func:`react_lab.tools.payment_tool` bind it); it
returns JSON-ready data or raises :class:`ToolError` with a message that says what to change.
Each schema (built with :func:`react_lab.schema.object_schema`, the id fields there too) lists
its properties in the function's parameter order. ``calc`` reads arithmetic through Python's
``ast``, never ``eval()`` (:mod:`react_lab._parsing.arithmetic`). ``schedule_payment`` writes
through the connection it is given: one to a copy of the database
(:func:`react_lab.lab.sandbox.payment_tools` makes the copy).

Units: invoice totals and payments are dollars; card charges are cents (12900 = $129.00).
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from ._parsing.arithmetic import ArithmeticRefused, evaluate
from .protocol import shown
from .schema import (
    CHARGE_ID,
    CUSTOMER_ID,
    HAS_NUMBER,
    HAS_WORD,
    INVOICE_ID,
    NEEDS,
    object_schema,
)

#: The shipped database (:data:`react_lab.tools.DB_PATH`): read, never written.
DB_PATH = Path(__file__).resolve().parent / "data" / "billing.sqlite"


#: The fields of the tools' results whose text someone outside the company writes: a
#: supplier's memo and name, a customer's company name, the card network's decline text. Free
#: text: an id or amount found only there is no source for a payment or an answer (the
#: provenance rule, :mod:`react_lab.provenance`). The help articles are the company's
#: own. A new tool that returns such a field adds its name here.
FREE_TEXT = ("memo", "supplier_name", "customer_name", "failure_reason")


class ToolError(Exception):
    """A tool's own error whose message says what to change.

    :func:`react_lab.tools.call_tool` shows the model its message as it is; any tool may raise it.
    """


# --- the read-only tools: plain functions, conn first (bound by default_tools) ----------

LIST_INVOICES = object_schema(
    customer_id=CUSTOMER_ID,
    since={
        "type": "string",
        "format": "date",
        "pattern": r"^\d{4}-\d{2}-\d{2}$",
        "description": "earliest issue date to include, YYYY-MM-DD",
        "examples": ["2026-01-01"],
    },
)


def list_invoices(conn: sqlite3.Connection, customer_id: str, since: str) -> list[dict]:
    """Return the customer's invoices issued on/after `since`, newest first, totals in dollars.

    One row per invoice *email* (the join with invoice_sends), so a re-sent invoice is
    listed twice. Nothing is validated: a `since` like "July 1st" is compared as a string
    and quietly matches nothing.
    """
    rows = conn.execute(
        "SELECT i.id AS invoice_id, i.issued, i.due, i.total, i.status, i.memo,"
        " s.sent_at AS emailed_at,"
        " (SELECT group_concat(id) FROM (SELECT id FROM charges WHERE invoice_id = i.id"
        " ORDER BY created)) AS charge_ids"
        " FROM invoices i LEFT JOIN invoice_sends s ON s.invoice_id = i.id"
        " WHERE i.customer_id = ? AND i.issued >= ?"
        " ORDER BY i.issued DESC, i.id DESC, s.sent_at",
        (customer_id, since),
    )
    return [dict(row, charge_ids=_split(row["charge_ids"])) for row in rows]


GET_CHARGE = object_schema(charge_id=CHARGE_ID)


def get_charge(conn: sqlite3.Connection, charge_id: str) -> dict:
    """Return one card charge (amount in cents); ToolError if there is no such charge."""
    row = conn.execute(
        "SELECT id AS charge_id, customer_id, invoice_id, amount, status, created, failure_reason"
        " FROM charges WHERE id = ?",
        (charge_id,),
    ).fetchone()
    if row is None:
        raise ToolError(
            f"no charge {shown(charge_id)}; charge ids look like ch_1KZq8f"
            " -- get them from list_invoices or find_invoice"
        )
    return dict(row)


SEARCH = object_schema(
    query={
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
        "pattern": HAS_WORD,
        "description": "a few keywords, e.g. duplicate charge refund",
        "examples": ["refund policy"],
    }
)


def search(conn: sqlite3.Connection, query: str) -> list[dict]:
    """Return the top 3 help-article passages for the query's words; ToolError if it has none.

    Each word is quoted, so FTS5 syntax in the query (quotes, AND, *, column:) is
    matched as plain text and can never raise a syntax error. A query without a word
    (``"???"``) is refused: an empty result would tell the model no article exists.
    """
    limit = SEARCH["properties"]["query"]["maxLength"]  # the schema's, checked here too
    if len(str(query)) > limit:
        raise ToolError(f"query is {len(str(query)):,} characters, at most {limit}; use keywords")
    words = re.findall(r"[^\W_]+", str(query))[:20]
    if not words:
        raise ToolError(
            f"query {shown(query)} {NEEDS[HAS_WORD]}; write a few keywords, e.g. refund policy"
        )
    match = " OR ".join(f'"{word}"' for word in words)
    rows = conn.execute(
        "SELECT article_id, title, snippet(help_articles, 2, '', '', '...', 64) AS snippet"
        " FROM help_articles WHERE help_articles MATCH ? ORDER BY rank LIMIT 3",
        (match,),
    )
    return [dict(row) for row in rows]


FIND_INVOICE = object_schema(invoice_id=INVOICE_ID)


def find_invoice(conn: sqlite3.Connection, invoice_id: str) -> dict:
    """Return one customer or supplier invoice (total in dollars); ToolError if there is none."""
    row = conn.execute(
        "SELECT i.id AS invoice_id, i.kind, i.customer_id, c.name AS customer_name,"
        " i.supplier_id, s.name AS supplier_name, i.issued, i.due, i.total, i.status, i.memo,"
        " (SELECT group_concat(id) FROM (SELECT id FROM charges WHERE invoice_id = i.id"
        " ORDER BY created)) AS charge_ids"
        " FROM invoices i LEFT JOIN customers c ON c.id = i.customer_id"
        " LEFT JOIN suppliers s ON s.id = i.supplier_id WHERE i.id = ?",
        (invoice_id,),
    ).fetchone()
    if row is None:
        raise ToolError(_no_invoice(invoice_id))
    invoice = {key: value for key, value in dict(row).items() if value is not None}
    if invoice["kind"] == "customer":
        invoice["charge_ids"] = _split(row["charge_ids"])
    return invoice


GET_PAYMENTS = object_schema(invoice_id=INVOICE_ID)


def get_payments(conn: sqlite3.Connection, invoice_id: str) -> dict:
    """Return {"invoice_id", "payments", "scheduled"} in dollars; ToolError if no such invoice."""
    if conn.execute("SELECT 1 FROM invoices WHERE id = ?", (invoice_id,)).fetchone() is None:
        raise ToolError(_no_invoice(invoice_id))
    payments = conn.execute(
        "SELECT id AS payment_id, paid_on, amount, method, charge_id FROM payments"
        " WHERE invoice_id = ? ORDER BY paid_on, id",
        (invoice_id,),
    )
    scheduled = conn.execute(
        "SELECT id AS scheduled_id, amount, status FROM scheduled_payments"
        " WHERE invoice_id = ? ORDER BY id",
        (invoice_id,),
    )
    return {
        "invoice_id": invoice_id,
        "payments": [dict(row) for row in payments],
        "scheduled": [dict(row) for row in scheduled],
    }


def _split(ids: str | None) -> list[str]:
    """Split a group_concat'ed id list ("a,b") into ["a", "b"]."""
    return ids.split(",") if ids else []


def _no_invoice(invoice_id: str) -> str:
    """Return the not-found message for an invoice id."""
    return (
        f"no invoice {shown(invoice_id)}; invoice ids look like INV-2041"
        " -- get them from list_invoices"
    )


# --- calc: arithmetic through the ast, never eval() --------------------------------------

CALC = object_schema(
    expression={
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
        "pattern": HAS_NUMBER,
        "description": "arithmetic with + - * / // % ** and parentheses, e.g. (129.00 + 45.00) * 2",
        "examples": ["(129.00 + 45.00) * 2"],
    }
)


def calc(expression: str) -> int | float:
    """Evaluate arithmetic on numbers; ToolError for names, calls, attributes or huge results."""
    try:  # the ast, walked node by node (react_lab._parsing.arithmetic)
        value = evaluate(str(expression).strip())
    except ArithmeticRefused as exc:
        raise ToolError(str(exc)) from None
    if not isinstance(value, float):
        return value
    rounded = round(value, 10)  # float noise away: 0.1 + 0.2 is 0.3
    return rounded if rounded or not value else float(f"{value:.10g}")  # 2**-100 is not 0


# --- the side-effecting tool ---------------------------------------------------------------

SCHEDULE_PAYMENT = object_schema(
    invoice_id={**INVOICE_ID, "description": "supplier invoice id, e.g. INV-2291"},
    amount={
        "type": "number",
        "exclusiveMinimum": 0,
        "description": "amount to pay in dollars, e.g. 48200 or 129.00",
        "examples": [100],
    },
)


def _dollars(amount: Any) -> float:
    """A payment amount in dollars: a number or plain decimal text with at most 2 decimals.

    ``True``, ``"1e-9"``, ``"1_000"``, ``"0.001"``, ``"100.0.0"``, ``nan`` and digits of
    other scripts (``"١٠٠"``, full-width ``"１００"``) raise ToolError: money is never
    guessed from a near miss.
    """
    text = (
        str(amount).strip()
        if isinstance(amount, (str, int, float)) and not isinstance(amount, bool)
        else None
    )
    # ASCII digits only: Python's \d and float() also read other scripts' digits ("١٠٠", "１００").
    if text is None or not re.fullmatch(r"[0-9]+(?:\.[0-9]{1,2})?|[0-9]*\.[0-9]{1,2}", text):
        raise ToolError(
            f"amount must be a number of dollars with at most 2 decimals, like 48200 "
            f"or 129.00, not {amount!r}"
        )
    return float(text)


def _writes_to_shipped(conn: sqlite3.Connection) -> bool:
    """True when ``conn``'s main database is the shipped file (:data:`DB_PATH`)."""
    main = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    return bool(main) and DB_PATH.exists() and os.path.samefile(main, DB_PATH)


def schedule_payment(conn: sqlite3.Connection, invoice_id: str, amount: float | str) -> dict:
    """Schedule `amount` dollars on an approved supplier invoice; ToolError if not allowed.

    Never through a connection to the shipped file (:data:`DB_PATH`), whoever made it.
    """
    amount = _dollars(amount)
    row = conn.execute(
        "SELECT kind, total, status,"
        " total - (SELECT coalesce(sum(amount), 0) FROM payments WHERE invoice_id = i.id)"
        " - (SELECT coalesce(sum(amount), 0) FROM scheduled_payments WHERE invoice_id = i.id)"
        " AS unpaid FROM invoices i WHERE id = ?",
        (invoice_id,),
    ).fetchone()
    if row is None:
        raise ToolError(_no_invoice(invoice_id))
    if row["kind"] != "supplier":
        raise ToolError(f"{invoice_id} is a customer invoice; only supplier invoices are paid")
    if row["status"] != "approved":
        raise ToolError(f"{invoice_id} is {row['status']}; only approved invoices can be paid")
    if not 0 < amount <= round(row["unpaid"], 2):
        raise ToolError(
            f"amount must be more than 0 and at most the unpaid"
            f" {row['unpaid']:.2f} dollars of {invoice_id}"
        )
    with conn:  # one transaction: an exception inside rolls the insert back
        cursor = conn.execute(  # a read-only connection stops here, with its database error
            "INSERT INTO scheduled_payments (invoice_id, amount) VALUES (?, ?)",
            (invoice_id, amount),
        )
        if _writes_to_shipped(conn):  # a writable connection to the shipped file: never commit
            raise ToolError(
                "refusing to write to the shipped database: this payment tool was given a "
                "connection to it, not to a working copy; nothing was scheduled"
            )
    return {
        "scheduled_id": cursor.lastrowid,
        "invoice_id": invoice_id,
        "amount": amount,
        "status": "scheduled",
    }
