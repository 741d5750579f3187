"""Build the evaluation set: ``python -m react_lab.data.build_tasks [OUT]`` writes ``tasks.json``.

Every gold answer is computed from the billing database by SQL (or, for the few
questions about the protocol itself, read from the prompt's own instructions);
none is typed in. Entities are picked from sorted query results at even spacing,
so the same database always gives the same 50 tasks (no randomness, no clock).

Each task records:

* ``question`` -- what the agent is asked;
* ``gold`` and ``kind`` -- the answer and how :func:`react_lab.tasks.score` compares it
  (``number`` with a ``unit``, ``date``, ``id``, ``yesno``, ``choice`` with ``choices``,
  ``text``);
* ``oracle`` -- the tool calls an oracle would make, ``[tool, [args...]]`` in order;
* ``sql`` and ``params`` -- the query that produced the gold answer, to read or re-run.
"""
from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

from react_lab import protocol  # the prompt's own text is the source for two questions
from react_lab.tools import open_db

OUT = Path(__file__).resolve().parent / "tasks.json"

CUSTOMER_STATUSES = ["open", "past_due", "partially_paid", "paid", "refunded"]
DECLINES = ["card_declined", "insufficient_funds", "expired_card"]
#: Asked in ``protocol.EXEMPLARS``, so left out: a model could copy the worked answer.
EXEMPLAR_CUSTOMERS = ("cus_4417",)
EXEMPLAR_INVOICES = ("INV-2323",)


def _one(conn: sqlite3.Connection, sql: str, params: tuple = ()):
    """Return the single value the query selects; AssertionError if it is not exactly one."""
    rows = conn.execute(sql, params).fetchall()
    assert len(rows) == 1 and len(rows[0]) == 1, f"expected one value from {sql!r} {params}"
    return rows[0][0]


def _spread(items: list, k: int) -> list:
    """Return k items at even spacing through a sorted list (first one included)."""
    assert len(items) >= k, f"need {k} items, have {len(items)}"
    return [items[i * len(items) // k] for i in range(k)]


def _column(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> list:
    """Return the first column of every row."""
    return [row[0] for row in conn.execute(sql, params)]


def _money(dollars: float) -> str:
    return f"{dollars:.2f}"


class _Tasks:
    """Collects tasks; ``add`` computes the gold answer by running ``sql``."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.items: list[dict] = []
        self.counts: dict[str, int] = {}

    def add(self, category: str, question: str, sql: str, params: tuple, kind: str, *,
            oracle: list, fmt=str, unit: str | None = None, choices: list | None = None,
            value=None) -> None:
        """Append a task; its gold is ``fmt(value)``, where value defaults to what ``sql`` selects."""
        self.counts[category] = self.counts.get(category, 0) + 1
        value = _one(self.conn, sql, params) if value is None else value
        task = {"id": f"{category}-{self.counts[category]:02d}", "category": category,
                "question": question, "gold": fmt(value), "kind": kind}
        if unit:
            task["unit"] = unit
        if choices:
            task["choices"] = choices
        task.update(oracle=[[tool, list(args)] for tool, args in oracle], sql=sql,
                    params=list(params))
        self.items.append(task)


def build_tasks(conn: sqlite3.Connection) -> list[dict]:
    """Return the evaluation tasks as JSON-ready dicts, gold answers computed from ``conn``."""
    t = _Tasks(conn)
    customers = _column(conn, "SELECT id FROM customers WHERE id NOT IN (%s) ORDER BY id"
                        % ",".join("?" * len(EXEMPLAR_CUSTOMERS)), EXEMPLAR_CUSTOMERS)

    # Latest invoice date and id: one list_invoices call from the first of that month.
    latest = "SELECT max(issued) FROM invoices WHERE customer_id = ?"
    for cus in ["cus_8812"] + _spread([c for c in customers if c != "cus_8812"], 3):
        since = _one(conn, latest, (cus,))[:8] + "01"
        t.add("latest_date", f"When was the latest invoice of {cus} issued?", latest, (cus,),
              "date", oracle=[("list_invoices", (cus, since))])
    for cus in _spread(customers[1:], 3):
        since = _one(conn, latest, (cus,))[:8] + "01"
        t.add("latest_id", f"What is the id of the most recent invoice of {cus}?",
              "SELECT id FROM invoices WHERE customer_id = ? ORDER BY issued DESC, id DESC LIMIT 1",
              (cus,), "id", oracle=[("list_invoices", (cus, since))])

    # Invoice totals (customer and supplier invoices) and statuses: one find_invoice call.
    total = "SELECT total FROM invoices WHERE id = ?"
    for inv in (_spread(_column(conn, "SELECT id FROM invoices WHERE kind = 'customer'"
                                      " ORDER BY id"), 2)
                + _spread(_column(conn, "SELECT id FROM invoices WHERE kind = 'supplier'"
                                        " ORDER BY total, id"), 2)):
        t.add("invoice_total", f"What is the total of invoice {inv}, in dollars?", total, (inv,),
              "number", unit="dollars", fmt=_money, oracle=[("find_invoice", (inv,))])
    for status in ["past_due", "partially_paid", "open", "refunded"]:
        inv = _column(conn, "SELECT id FROM invoices WHERE status = ? ORDER BY id", (status,))[0]
        t.add("invoice_status", f"What is the status of invoice {inv}?",
              "SELECT status FROM invoices WHERE id = ?", (inv,), "choice",
              choices=CUSTOMER_STATUSES, oracle=[("find_invoice", (inv,))])

    # Counting invoices, where a re-sent invoice is listed twice by list_invoices.
    resent = _column(conn, "SELECT DISTINCT i.customer_id FROM invoices i JOIN invoice_sends s"
                           " ON s.invoice_id = i.id WHERE i.issued >= '2026-05-01'"
                           " GROUP BY s.invoice_id HAVING count(*) > 1 ORDER BY 1")
    for cus in ["cus_8812"] + _spread([c for c in resent if c in customers and c != "cus_8812"], 3):
        t.add("count_invoices", f"How many invoices were issued to {cus} since 2026-05-01?",
              "SELECT count(*) FROM invoices WHERE customer_id = ? AND issued >= ?",
              (cus, "2026-05-01"), "number", unit="count",
              oracle=[("list_invoices", (cus, "2026-05-01"))])

    # Card charges: amount (cents in the tool, dollars asked), status, failure reason.
    succeeded = _column(conn, "SELECT id FROM charges WHERE status = 'succeeded'"
                              " ORDER BY amount DESC, id")
    for ch in _spread(succeeded, 2):
        t.add("charge", f"How much was card charge {ch} for, in dollars?",
              "SELECT amount / 100.0 FROM charges WHERE id = ?", (ch,), "number",
              unit="dollars", fmt=_money, oracle=[("get_charge", (ch,))])
    for reason in ("card_declined", "expired_card"):
        ch = _column(conn, "SELECT id FROM charges WHERE failure_reason = ? ORDER BY id",
                     (reason,))[0]
        t.add("charge", f"Why did card charge {ch} fail?",
              "SELECT failure_reason FROM charges WHERE id = ?", (ch,), "choice",
              choices=DECLINES, oracle=[("get_charge", (ch,))])

    # Duplicate checks: two *succeeded* charges on one invoice (KB-03), not two listings.
    charges_of = "SELECT id FROM charges WHERE invoice_id = ? ORDER BY created"
    dupes = _column(conn, "SELECT invoice_id FROM charges WHERE status = 'succeeded'"
                          " GROUP BY invoice_id HAVING count(*) > 1 ORDER BY 1")
    mixed = _column(conn, "SELECT invoice_id FROM charges GROUP BY invoice_id HAVING count(*) > 1"
                          " AND sum(status = 'succeeded') = 1 ORDER BY 1")
    for inv in _spread(dupes, 2) + ["INV-2041"] + _spread(mixed, 2):
        calls = [("find_invoice", (inv,))] + [("get_charge", (ch,))
                                              for ch in _column(conn, charges_of, (inv,))]
        t.add("duplicate", f"Was invoice {inv} charged twice, with two succeeded card charges?",
              "SELECT CASE WHEN count(*) > 1 THEN 'yes' ELSE 'no' END FROM charges"
              " WHERE invoice_id = ? AND status = 'succeeded'", (inv,), "yesno", oracle=calls)

    # Paid in full? Payments (refunds negative) against the total: find_invoice + get_payments.
    paid_sql = ("SELECT CASE WHEN coalesce((SELECT sum(amount) FROM payments WHERE invoice_id"
                " = i.id), 0) >= i.total THEN 'yes' ELSE 'no' END FROM invoices i WHERE id = ?")
    picks = ([i for i in _column(conn, "SELECT id FROM invoices WHERE kind = 'supplier'"
                                       " AND status = 'approved' ORDER BY id")
              if i not in EXEMPLAR_INVOICES][:2]
             + _column(conn, "SELECT id FROM invoices WHERE status = 'partially_paid' ORDER BY id")[:1]
             + _spread(_column(conn, "SELECT id FROM invoices WHERE status = 'paid' ORDER BY id"), 2))
    for inv in picks:
        t.add("paid_in_full", f"Has invoice {inv} been paid in full?", paid_sql, (inv,), "yesno",
              oracle=[("find_invoice", (inv,)), ("get_payments", (inv,))])
    for inv in _column(conn, "SELECT id FROM invoices WHERE status = 'partially_paid'"
                             " ORDER BY id")[1:3]:
        t.add("amount_paid", f"How much has been paid on invoice {inv} so far, in dollars?",
              "SELECT round(sum(amount), 2) FROM payments WHERE invoice_id = ?", (inv,),
              "number", unit="dollars", fmt=_money, oracle=[("get_payments", (inv,))])

    # Help articles: a number read out of an article's body, or the id of an article.
    body = "SELECT body FROM help_articles WHERE title = ?"
    for title, question, pattern, query in [
        ("Late payment reminders", "How many days after an unpaid invoice's due date is the "
         "first reminder emailed?", r"reminder (\d+)", "late payment reminders"),
        ("Failed card payments", "How many days after a failed card charge is it retried?",
         r"after (\d+) days", "failed card payments retry"),
        ("Payment terms", "How many days after issue is a bank transfer customer's invoice due?",
         r"due (\d+) days", "payment terms bank transfer"),
        ("Chargebacks", "Within how many days must a chargeback be answered?",
         r"within (\d+) days", "chargebacks"),
    ]:
        days = re.search(pattern, _one(conn, body, (title,))).group(1)
        t.add("help", question, f"{body}  -- then the regex {pattern}", (title,), "number",
              unit="days", value=days, oracle=[("search", (query,))])
    t.add("help", "What is the id of the help article titled 'Invoice listed twice'?",
          "SELECT article_id FROM help_articles WHERE title = ?", ("Invoice listed twice",),
          "id", oracle=[("search", ("invoice listed twice",))])

    # Supplier invoices: who sent it, when it is due.
    suppliers = _spread(_column(conn, "SELECT id FROM invoices WHERE kind = 'supplier'"
                                      " ORDER BY id"), 4)
    t.add("supplier", f"Which supplier sent invoice {suppliers[1]}?",
          "SELECT s.name FROM invoices i JOIN suppliers s ON s.id = i.supplier_id WHERE i.id = ?",
          (suppliers[1],), "text", oracle=[("find_invoice", (suppliers[1],))])
    for inv in ("INV-2291", suppliers[3]):
        t.add("supplier", f"When is supplier invoice {inv} due?",
              "SELECT due FROM invoices WHERE id = ?", (inv,), "date",
              oracle=[("find_invoice", (inv,))])

    # Two or three calls: look two invoices up, then add; follow an invoice to its charge.
    pairs = _spread(_column(conn, "SELECT id FROM invoices WHERE kind = 'customer'"
                                  " ORDER BY total, id"), 4)
    for a, b in (pairs[:2], pairs[2:]):
        ta, tb = _one(conn, total, (a,)), _one(conn, total, (b,))
        t.add("multi_step", f"What is the combined total of invoices {a} and {b}, in dollars?",
              "SELECT round(sum(total), 2) FROM invoices WHERE id IN (?, ?)", (a, b), "number",
              unit="dollars", fmt=_money, oracle=[("find_invoice", (a,)), ("find_invoice", (b,)),
                                                  ("calc", (f"{ta} + {tb}",))])
    inv = "INV-2041"
    ch = _column(conn, charges_of, (inv,))[0]
    t.add("multi_step", f"How many cents was the card charge that paid invoice {inv}?",
          "SELECT amount FROM charges WHERE invoice_id = ? AND status = 'succeeded'", (inv,),
          "number", unit="cents", oracle=[("find_invoice", (inv,)), ("get_charge", (ch,))])

    # No tool needed: arithmetic (computed by SQLite) and questions about the protocol.
    for expr in ["129 * 3", "48200 - 1850"]:
        t.add("no_tool", f"What is {expr}? Answer directly.", f"SELECT {expr}", (), "number",
              fmt=lambda v: f"{v:g}", oracle=[])
    who = re.search(r"Observation: .*?The (\w+) writes", protocol.INSTRUCTIONS).group(1)
    for question, gold, choices in [
        ("In this protocol, who writes the Observation lines: the model or the program?",
         who, ["model", "program"]),
        ("Which label starts the line on which you call a tool?", protocol.ACTION,
         [protocol.THOUGHT, protocol.ACTION, protocol.OBSERVATION, "Answer"]),
    ]:
        t.add("no_tool", question, "-- read from react_lab.protocol (the prompt's instructions)",
              (), "choice", value=gold.lower(), choices=[c.lower() for c in choices], oracle=[])
    return t.items


def write_tasks(out: str | Path = OUT, db: str | Path | None = None) -> Path:
    """Build the tasks from the shipped database (or ``db``) and write them as JSON."""
    conn = open_db(db)
    try:
        tasks = build_tasks(conn)
    finally:
        conn.close()
    out = Path(out)
    out.write_text(json.dumps(tasks, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":  # pragma: no cover
    path = write_tasks(sys.argv[1] if len(sys.argv) > 1 else OUT)
    print(f"wrote {len(json.loads(path.read_text()))} tasks to {path}")
