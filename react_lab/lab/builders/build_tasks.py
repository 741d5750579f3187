"""Build the evaluation set.

``python -m react_lab.lab.builders.build_tasks [OUT]`` writes ``tasks.json``.

Every gold answer is computed from the billing database by SQL (or, for the few
questions about the protocol itself, read from the prompt's own instructions);
none is typed in. Entities are picked from sorted query results at even spacing,
so the same database always gives the same tasks (no clock; the one random choice,
the split, comes from a fixed seed). The first 50 tasks are the original set, kept
as they were; :func:`_more_tasks` adds the rest (same categories and question
templates, each on an entity no other task touches), for 206 in all.

The set is split once into a development half and a test half (:func:`assign_splits`):
tune on ``dev``, report on ``test``. Tasks that could leak into each other -- one
task's subject id shows up in what another task's tool calls return -- share a
split, so an exemplar built from a development run never shows a test task's answer.

Each task records:

* ``question`` -- what the agent is asked;
* ``gold`` and ``kind`` -- the answer and how :func:`react_lab.lab.experiments.tasks.score`
  compares it (``number`` with a ``unit``, ``date``, ``id``, ``yesno``, ``choice`` with
  ``choices``, ``text``);
* ``oracle`` -- the tool calls an oracle would make, ``[tool, [args...]]`` in order;
* ``sql`` and ``params`` -- the query that produced the gold answer, to read or re-run;
* ``split`` -- ``"dev"`` or ``"test"``.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import sys
from pathlib import Path

from ... import protocol  # the prompt's own text is the source for two questions
from ...tools import ID_RE, open_db
from ..notebook.gold import DUPLICATE_SQL, PAID_SQL
from .build_injection import without_rows

OUT = Path(__file__).resolve().parents[2] / "data" / "tasks.json"

CUSTOMER_STATUSES = ["open", "past_due", "partially_paid", "paid", "refunded"]
DECLINES = ["card_declined", "insufficient_funds", "expired_card"]
#: Asked in ``protocol.EXEMPLARS``, so left out: a model could copy the worked answer.
EXEMPLAR_CUSTOMERS = ("cus_4417",)
EXEMPLAR_INVOICES = ("INV-2323",)
#: Seed of the dev/test split. Changing it (or the tasks) re-splits the set: don't, once
#: results on the test half have been reported.
SPLIT_SEED = 20260815
SPLITS = ("dev", "test")
#: The scenarios the notebooks run live stay in the test half, so that no exemplar built
#: from a development run can hold their answers.
TEST_PINNED = ("cus_8812", "INV-2041", "INV-2291")
#: The choices of the questions that ask which label starts a line.
PROTOCOL_LABELS = [protocol.THOUGHT, protocol.ACTION, protocol.OBSERVATION, "Answer"]
#: Ids as they appear in questions and tool output (customers, invoices, charges,
#: suppliers, payments, help articles).


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
    """Collects tasks; ``add`` computes the gold answer by running ``sql``.

    It also records, per task id, its *subjects* (the ids its question asks about) and
    the ids it *touches* (subjects, plus every id its oracle's tool calls return), for
    :meth:`fresh` and :func:`assign_splits`.
    """

    def __init__(self, conn: sqlite3.Connection):
        from ...tools import default_tools

        self.conn = conn
        self.tools = default_tools(conn)
        self.items: list[dict] = []
        self.counts: dict[str, int] = {}
        self.subjects: dict[str, set[str]] = {}
        self.touched: dict[str, set[str]] = {}

    def touches(self, subjects: set[str], oracle: list) -> set[str]:
        """Return ``subjects`` plus the ids in the oracle calls' arguments and observations.

        A customer id named in an observation as an invoice's or charge's owner is left
        out: it says nothing about that customer's other invoices. (A customer's own
        listing names its invoices, and those count.)
        """
        from ...tools import call_tool

        ids = set(subjects)
        for tool, args in oracle:
            shown = ID_RE.findall(
                " ".join(args) + " " + call_tool(self.tools, tool, list(args)).text
            )
            ids |= {i for i in shown if not i.startswith("cus_")}
        return ids

    def fresh(self, subjects: set[str], oracle: list) -> bool:
        """True when a task on ``subjects`` shares no id with any task so far, either way.

        "Shares" means one task's subjects appear among what the other touches.
        """
        touched = self.touches(subjects, oracle)
        return not any(
            subjects & other or touched & self.subjects[tid] for tid, other in self.touched.items()
        )

    def add(
        self,
        category: str,
        question: str,
        sql: str,
        params: tuple,
        kind: str,
        *,
        oracle: list,
        fmt=str,
        unit: str | None = None,
        choices: list | None = None,
        value=None,
        subjects: set[str] | None = None,
    ) -> None:
        """Append a task; its gold is ``fmt(value)``, where value defaults to what ``sql`` selects.

        ``subjects`` defaults to the ids written in the question.
        """
        self.counts[category] = self.counts.get(category, 0) + 1
        value = _one(self.conn, sql, params) if value is None else value
        task = {
            "id": f"{category}-{self.counts[category]:02d}",
            "category": category,
            "question": question,
            "gold": fmt(value),
            "kind": kind,
        }
        if unit:
            task["unit"] = unit
        if choices:
            task["choices"] = choices
        task.update(
            oracle=[[tool, list(args)] for tool, args in oracle], sql=sql, params=list(params)
        )
        self.items.append(task)
        subjects = set(ID_RE.findall(question)) if subjects is None else set(subjects)
        self.subjects[task["id"]] = subjects
        self.touched[task["id"]] = self.touches(subjects, oracle)

    def pick(self, candidates: list, k: int, make):
        """Yield ``k`` fresh candidates, spread evenly through the (sorted) list.

        ``make(candidate)`` returns the ``(subjects, oracle)`` its task would have. From
        each even-spaced position the first fresh candidate at or after it is taken
        (wrapping round); add each task before asking for the next, so that the next is
        fresh with respect to it too. AssertionError if fewer than ``k`` are fresh.
        """
        chosen: list = []
        for i in range(k):
            start = i * len(candidates) // k
            for j in range(len(candidates)):
                c = candidates[(start + j) % len(candidates)]
                if c not in chosen and self.fresh(*make(c)):
                    chosen.append(c)
                    yield c
                    break
            else:
                raise AssertionError(f"only {len(chosen)} fresh candidates, {k} wanted")


# The SQL a question template runs, and the lists entities are picked from: each written
# once, for the original set and for _more_tasks alike.
LATEST_SQL = "SELECT max(issued) FROM invoices WHERE customer_id = ?"
TOTAL_SQL = "SELECT total FROM invoices WHERE id = ?"
CHARGES_OF_SQL = "SELECT id FROM charges WHERE invoice_id = ? ORDER BY created"
HELP_BODY_SQL = "SELECT body FROM help_articles WHERE title = ?"
ARTICLE_SQL = "SELECT article_id FROM help_articles WHERE title = ?"
CUSTOMERS_SQL = "SELECT id FROM customers WHERE id NOT IN (%s) ORDER BY id" % ",".join(
    "?" * len(EXEMPLAR_CUSTOMERS)
)
#: Customers with an invoice sent twice since May: list_invoices shows it twice.
RESENT_SQL = (
    "SELECT DISTINCT i.customer_id FROM invoices i JOIN invoice_sends s"
    " ON s.invoice_id = i.id WHERE i.issued >= '2026-05-01'"
    " GROUP BY s.invoice_id HAVING count(*) > 1 ORDER BY 1"
)
#: Invoices with two succeeded card charges: real duplicates.
DUPES_SQL = (
    "SELECT invoice_id FROM charges WHERE status = 'succeeded'"
    " GROUP BY invoice_id HAVING count(*) > 1 ORDER BY 1"
)
#: Invoices with several charges, one of them succeeded: not duplicates.
MIXED_SQL = (
    "SELECT invoice_id FROM charges GROUP BY invoice_id HAVING count(*) > 1"
    " AND sum(status = 'succeeded') = 1 ORDER BY 1"
)
#: The day list_invoices is asked to list from in the count_invoices questions.
SINCE = "2026-05-01"


# Oracles: the tool calls that answer a template's question about one entity.
def _latest_listing(conn: sqlite3.Connection, cus: str) -> list:
    """List ``cus``'s invoices from the first day of the month of its latest one."""
    return [("list_invoices", (cus, _one(conn, LATEST_SQL, (cus,))[:8] + "01"))]


def _charges_lookup(conn: sqlite3.Connection, inv: str) -> list:
    """Look invoice ``inv`` up, then each of its card charges, oldest first."""
    return [("find_invoice", (inv,))] + [
        ("get_charge", (ch,)) for ch in _column(conn, CHARGES_OF_SQL, (inv,))
    ]


# Question templates: one function a template, used by the original set and by
# _more_tasks alike, so that the same question always reads, and is scored, the same way.
def _ask_latest_date(t: _Tasks, cus: str) -> None:
    """When was ``cus``'s latest invoice issued? (one list_invoices call)"""
    t.add(
        "latest_date",
        f"When was the latest invoice of {cus} issued?",
        LATEST_SQL,
        (cus,),
        "date",
        oracle=_latest_listing(t.conn, cus),
    )


def _ask_latest_id(t: _Tasks, cus: str) -> None:
    """Which is ``cus``'s most recent invoice? (one list_invoices call)"""
    t.add(
        "latest_id",
        f"What is the id of the most recent invoice of {cus}?",
        "SELECT id FROM invoices WHERE customer_id = ? ORDER BY issued DESC, id DESC LIMIT 1",
        (cus,),
        "id",
        oracle=_latest_listing(t.conn, cus),
    )


def _ask_count_invoices(t: _Tasks, cus: str) -> None:
    """How many invoices did ``cus`` get since :data:`SINCE`? (a re-sent one is listed twice)"""
    t.add(
        "count_invoices",
        f"How many invoices were issued to {cus} since {SINCE}?",
        "SELECT count(*) FROM invoices WHERE customer_id = ? AND issued >= ?",
        (cus, SINCE),
        "number",
        unit="count",
        oracle=[("list_invoices", (cus, SINCE))],
    )


def _ask_invoice_total(t: _Tasks, inv: str) -> None:
    """What is the total of invoice ``inv``, in dollars? (one find_invoice call)"""
    t.add(
        "invoice_total",
        f"What is the total of invoice {inv}, in dollars?",
        TOTAL_SQL,
        (inv,),
        "number",
        unit="dollars",
        fmt=_money,
        oracle=[("find_invoice", (inv,))],
    )


def _ask_invoice_status(t: _Tasks, inv: str) -> None:
    """What is the status of invoice ``inv``? (one find_invoice call)"""
    t.add(
        "invoice_status",
        f"What is the status of invoice {inv}?",
        "SELECT status FROM invoices WHERE id = ?",
        (inv,),
        "choice",
        choices=CUSTOMER_STATUSES,
        oracle=[("find_invoice", (inv,))],
    )


def _ask_charge_amount(t: _Tasks, ch: str) -> None:
    """How much was card charge ``ch`` for, in dollars? (the tool shows cents)"""
    t.add(
        "charge",
        f"How much was card charge {ch} for, in dollars?",
        "SELECT amount / 100.0 FROM charges WHERE id = ?",
        (ch,),
        "number",
        unit="dollars",
        fmt=_money,
        oracle=[("get_charge", (ch,))],
    )


def _ask_charge_failure(t: _Tasks, ch: str) -> None:
    """Why did card charge ``ch`` fail? (one of :data:`DECLINES`)"""
    t.add(
        "charge",
        f"Why did card charge {ch} fail?",
        "SELECT failure_reason FROM charges WHERE id = ?",
        (ch,),
        "choice",
        choices=DECLINES,
        oracle=[("get_charge", (ch,))],
    )


def _ask_duplicate(t: _Tasks, inv: str) -> None:
    """Was invoice ``inv`` charged twice: two *succeeded* charges (KB-03), not two listings."""
    t.add(
        "duplicate",
        f"Was invoice {inv} charged twice, with two succeeded card charges?",
        DUPLICATE_SQL,
        (inv,),
        "yesno",
        oracle=_charges_lookup(t.conn, inv),
    )


def _ask_paid_in_full(t: _Tasks, inv: str) -> None:
    """Has invoice ``inv`` been paid in full? Payments (refunds negative) against the total."""
    t.add(
        "paid_in_full",
        f"Has invoice {inv} been paid in full?",
        PAID_SQL,
        (inv,),
        "yesno",
        oracle=[("find_invoice", (inv,)), ("get_payments", (inv,))],
    )


def _ask_amount_paid(t: _Tasks, inv: str) -> None:
    """How much has been paid on invoice ``inv`` so far? (one get_payments call)"""
    t.add(
        "amount_paid",
        f"How much has been paid on invoice {inv} so far, in dollars?",
        "SELECT round(sum(amount), 2) FROM payments WHERE invoice_id = ?",
        (inv,),
        "number",
        unit="dollars",
        fmt=_money,
        oracle=[("get_payments", (inv,))],
    )


def _ask_supplier_name(t: _Tasks, inv: str) -> None:
    """Which supplier sent invoice ``inv``? (one find_invoice call)"""
    t.add(
        "supplier",
        f"Which supplier sent invoice {inv}?",
        "SELECT s.name FROM invoices i JOIN suppliers s ON s.id = i.supplier_id WHERE i.id = ?",
        (inv,),
        "text",
        oracle=[("find_invoice", (inv,))],
    )


def _ask_supplier_due(t: _Tasks, inv: str) -> None:
    """When is supplier invoice ``inv`` due? (one find_invoice call)"""
    t.add(
        "supplier",
        f"When is supplier invoice {inv} due?",
        "SELECT due FROM invoices WHERE id = ?",
        (inv,),
        "date",
        oracle=[("find_invoice", (inv,))],
    )


def _ask_combined_total(t: _Tasks, a: str, b: str) -> None:
    """What is the combined total of invoices ``a`` and ``b``? (two lookups, then calc)"""
    ta, tb = _one(t.conn, TOTAL_SQL, (a,)), _one(t.conn, TOTAL_SQL, (b,))
    t.add(
        "multi_step",
        f"What is the combined total of invoices {a} and {b}, in dollars?",
        "SELECT round(sum(total), 2) FROM invoices WHERE id IN (?, ?)",
        (a, b),
        "number",
        unit="dollars",
        fmt=_money,
        oracle=[("find_invoice", (a,)), ("find_invoice", (b,)), ("calc", (f"{ta} + {tb}",))],
    )


def _ask_paying_charge(t: _Tasks, inv: str) -> None:
    """How many cents was the charge that paid ``inv``? (the invoice, then its charges)"""
    t.add(
        "multi_step",
        f"How many cents was the card charge that paid invoice {inv}?",
        "SELECT amount FROM charges WHERE invoice_id = ? AND status = 'succeeded'",
        (inv,),
        "number",
        unit="cents",
        oracle=_charges_lookup(t.conn, inv),
    )


def _ask_help_days(t: _Tasks, title: str, question: str, pattern: str, query: str) -> None:
    """Ask a number of days read out of article ``title``'s body by ``pattern``.

    The oracle searches for ``query``; the task's subject is the article's id.
    """
    days = re.search(pattern, _one(t.conn, HELP_BODY_SQL, (title,))).group(1)
    t.add(
        "help",
        question,
        f"{HELP_BODY_SQL}  -- then the regex {pattern}",
        (title,),
        "number",
        unit="days",
        value=days,
        oracle=[("search", (query,))],
        subjects={_one(t.conn, ARTICLE_SQL, (title,))},
    )


def _article_search(conn: sqlite3.Connection, title: str) -> tuple[set, list]:
    """The subjects and oracle of a question on article ``title``: its id; a search for it."""
    return {_one(conn, ARTICLE_SQL, (title,))}, [("search", (title.lower(),))]


def _ask_article_id(t: _Tasks, title: str) -> None:
    """What is the id of the help article titled ``title``? (one search)"""
    subjects, oracle = _article_search(t.conn, title)
    t.add(
        "help",
        f"What is the id of the help article titled '{title}'?",
        ARTICLE_SQL,
        (title,),
        "id",
        oracle=oracle,
        subjects=subjects,
    )


def _ask_arithmetic(t: _Tasks, expr: str) -> None:
    """What is ``expr``? No tool needed; SQLite computes the gold answer."""
    t.add(
        "no_tool",
        f"What is {expr}? Answer directly.",
        f"SELECT {expr}",
        (),
        "number",
        fmt=lambda v: f"{v:g}",
        oracle=[],
    )


def _ask_protocol(t: _Tasks, question: str, gold: str, choices: list[str]) -> None:
    """A question about the protocol itself, its gold read from the prompt's own text."""
    t.add(
        "no_tool",
        question,
        "-- read from react_lab.protocol (the prompt's instructions)",
        (),
        "choice",
        value=gold.lower(),
        choices=[c.lower() for c in choices],
        oracle=[],
    )


def build_tasks(conn: sqlite3.Connection) -> list[dict]:
    """Return the evaluation tasks as JSON-ready dicts, gold answers computed from ``conn``."""
    conn = without_rows(conn)  # the database before the injection suite's rows
    t = _Tasks(conn)
    customers = _column(conn, CUSTOMERS_SQL, EXEMPLAR_CUSTOMERS)

    # Latest invoice date and id: one list_invoices call from the first of that month.
    for cus in ["cus_8812"] + _spread([c for c in customers if c != "cus_8812"], 3):
        _ask_latest_date(t, cus)
    for cus in _spread(customers[1:], 3):
        _ask_latest_id(t, cus)

    # Invoice totals (customer and supplier invoices) and statuses: one find_invoice call.
    for inv in _spread(
        _column(conn, "SELECT id FROM invoices WHERE kind = 'customer' ORDER BY id"), 2
    ) + _spread(
        _column(conn, "SELECT id FROM invoices WHERE kind = 'supplier' ORDER BY total, id"), 2
    ):
        _ask_invoice_total(t, inv)
    for status in ["past_due", "partially_paid", "open", "refunded"]:
        inv = _column(conn, "SELECT id FROM invoices WHERE status = ? ORDER BY id", (status,))[0]
        _ask_invoice_status(t, inv)

    # Counting invoices, where a re-sent invoice is listed twice by list_invoices.
    resent = _column(conn, RESENT_SQL)
    for cus in ["cus_8812"] + _spread([c for c in resent if c in customers and c != "cus_8812"], 3):
        _ask_count_invoices(t, cus)

    # Card charges: amount (cents in the tool, dollars asked), status, failure reason.
    succeeded = _column(
        conn, "SELECT id FROM charges WHERE status = 'succeeded' ORDER BY amount DESC, id"
    )
    for ch in _spread(succeeded, 2):
        _ask_charge_amount(t, ch)
    for reason in ("card_declined", "expired_card"):
        ch = _column(
            conn, "SELECT id FROM charges WHERE failure_reason = ? ORDER BY id", (reason,)
        )[0]
        _ask_charge_failure(t, ch)

    # Duplicate checks: two *succeeded* charges on one invoice (KB-03), not two listings.
    dupes = _column(conn, DUPES_SQL)
    mixed = _column(conn, MIXED_SQL)
    for inv in _spread(dupes, 2) + ["INV-2041"] + _spread(mixed, 2):
        _ask_duplicate(t, inv)

    # Paid in full? Payments (refunds negative) against the total: find_invoice + get_payments.
    picks = (
        [
            i
            for i in _column(
                conn,
                "SELECT id FROM invoices WHERE kind = 'supplier'"
                " AND status = 'approved' ORDER BY id",
            )
            if i not in EXEMPLAR_INVOICES
        ][:2]
        + _column(conn, "SELECT id FROM invoices WHERE status = 'partially_paid' ORDER BY id")[:1]
        + _spread(_column(conn, "SELECT id FROM invoices WHERE status = 'paid' ORDER BY id"), 2)
    )
    for inv in picks:
        _ask_paid_in_full(t, inv)
    for inv in _column(conn, "SELECT id FROM invoices WHERE status = 'partially_paid' ORDER BY id")[
        1:3
    ]:
        _ask_amount_paid(t, inv)

    # Help articles: a number read out of an article's body, or the id of an article.
    for title, question, pattern, query in [
        (
            "Late payment reminders",
            "How many days after an unpaid invoice's due date is the first reminder emailed?",
            r"reminder (\d+)",
            "late payment reminders",
        ),
        (
            "Failed card payments",
            "How many days after a failed card charge is it retried?",
            r"after (\d+) days",
            "failed card payments retry",
        ),
        (
            "Payment terms",
            "How many days after issue is a bank transfer customer's invoice due?",
            r"due (\d+) days",
            "payment terms bank transfer",
        ),
        (
            "Chargebacks",
            "Within how many days must a chargeback be answered?",
            r"within (\d+) days",
            "chargebacks",
        ),
    ]:
        _ask_help_days(t, title, question, pattern, query)
    _ask_article_id(t, "Invoice listed twice")

    # Supplier invoices: who sent it, when it is due.
    suppliers = _spread(
        _column(conn, "SELECT id FROM invoices WHERE kind = 'supplier' ORDER BY id"), 4
    )
    _ask_supplier_name(t, suppliers[1])
    for inv in ("INV-2291", suppliers[3]):
        _ask_supplier_due(t, inv)

    # Two or three calls: look two invoices up, then add; follow an invoice to its charge.
    pairs = _spread(
        _column(conn, "SELECT id FROM invoices WHERE kind = 'customer' ORDER BY total, id"), 4
    )
    for a, b in (pairs[:2], pairs[2:]):
        _ask_combined_total(t, a, b)
    _ask_paying_charge(t, "INV-2041")  # its one charge

    # No tool needed: arithmetic (computed by SQLite) and questions about the protocol.
    for expr in ["129 * 3", "48200 - 1850"]:
        _ask_arithmetic(t, expr)
    who = re.search(r"Observation: .*?The (\w+) writes", protocol.INSTRUCTIONS).group(1)
    _ask_protocol(
        t,
        "In this protocol, who writes the Observation lines: the model or the program?",
        who,
        ["model", "program"],
    )
    _ask_protocol(
        t,
        "Which label starts the line on which you call a tool?",
        protocol.ACTION,
        PROTOCOL_LABELS,
    )
    _more_tasks(t)
    assign_splits(t)
    return t.items


def _more_tasks(t: _Tasks) -> None:
    """Add the tasks after the original 50: same categories and question templates.

    Each new task's entity is *fresh* (:meth:`_Tasks.fresh`): no other task, and no
    exemplar of ``protocol.EXEMPLARS``, asks about an id it touches or touches an id it
    asks about, so a run of one shows nothing of another's answer. Invoice-level
    categories come first (their entities are scarce), then the customer-level ones.
    """
    conn = t.conn
    for i, ex in enumerate(protocol.EXEMPLARS, 1):  # exemplars block their ids like tasks do
        t.subjects[f"exemplar-{i}"] = set(ID_RE.findall(ex.question))
        t.touched[f"exemplar-{i}"] = set(ID_RE.findall(ex.render()))

    def invoice(*tools):
        return lambda inv: ({inv}, [(tool, (inv,)) for tool in tools])

    def ids(sql: str, params: tuple = ()) -> list:
        return _column(conn, sql, params)

    customer_invoices = "SELECT id FROM invoices WHERE kind = 'customer' AND status = ? ORDER BY id"

    # Duplicates: the one real duplicate left, invoices with one succeeded charge among
    # several (a failed or refunded one too), invoices with a single succeeded charge.
    def charged(inv):
        return {inv}, _charges_lookup(conn, inv)

    dupes = ids(DUPES_SQL)
    mixed = ids(MIXED_SQL)
    single = ids(
        "SELECT invoice_id FROM charges GROUP BY invoice_id HAVING count(*) = 1"
        " AND sum(status = 'succeeded') = 1 ORDER BY 1"
    )
    for pool, k in ((dupes, 1), (mixed, 4), (single, 2)):
        for inv in t.pick(pool, k, charged):
            _ask_duplicate(t, inv)

    # Customer-level tasks next: each takes the invoices its listing shows, so the
    # invoice-level tasks below come from the other invoices.
    customers = ids(CUSTOMERS_SQL, EXEMPLAR_CUSTOMERS)

    def listed(cus):
        return {cus}, _latest_listing(conn, cus)

    for cus in t.pick(customers, 14, listed):
        _ask_latest_date(t, cus)
    for cus in t.pick(customers, 13, listed):
        _ask_latest_id(t, cus)
    resent = ids(RESENT_SQL)
    recent = ids(
        "SELECT DISTINCT customer_id FROM invoices WHERE issued >= '2026-05-01' ORDER BY 1"
    )

    def since_may(cus):
        return {cus}, [("list_invoices", (cus, SINCE))]

    for pool, k in (
        ([c for c in resent if c in customers], 7),
        ([c for c in recent if c in customers and c not in resent], 7),
    ):
        for cus in t.pick(pool, k, since_may):
            _ask_count_invoices(t, cus)

    # Amount paid so far on partially paid invoices.
    for inv in t.pick(ids(customer_invoices, ("partially_paid",)), 8, invoice("get_payments")):
        _ask_amount_paid(t, inv)

    # Statuses, every customer status.
    for status, k in (
        ("past_due", 3),
        ("partially_paid", 3),
        ("open", 3),
        ("refunded", 2),
        ("paid", 3),
    ):
        for inv in t.pick(ids(customer_invoices, (status,)), k, invoice("find_invoice")):
            _ask_invoice_status(t, inv)

    # Card charges: amounts (spread over the sizes) and every failure reason.
    def charge(ch):
        return {ch}, [("get_charge", (ch,))]

    for ch in t.pick(
        ids("SELECT id FROM charges WHERE status = 'succeeded' ORDER BY amount DESC, id"), 8, charge
    ):
        _ask_charge_amount(t, ch)
    for reason in DECLINES:
        for ch in t.pick(
            ids("SELECT id FROM charges WHERE failure_reason = ? ORDER BY id", (reason,)), 2, charge
        ):
            _ask_charge_failure(t, ch)

    # Paid in full: supplier and customer invoices, paid and not.
    suppliers_with = (
        "SELECT id FROM invoices WHERE kind = 'supplier' AND status IN (%s) ORDER BY id"
    )
    for pool, k in (
        (ids(suppliers_with % "'paid'"), 3),
        (ids(suppliers_with % "'received', 'disputed'"), 1),
        (ids(customer_invoices, ("paid",)), 4),
        (ids(customer_invoices, ("partially_paid",)), 1),
        (ids(customer_invoices, ("open",)) + ids(customer_invoices, ("past_due",)), 5),
        (ids(customer_invoices, ("refunded",)), 1),
    ):
        for inv in t.pick(pool, k, invoice("find_invoice", "get_payments")):
            _ask_paid_in_full(t, inv)

    # Totals of customer and supplier invoices.
    for pool, k in (
        (ids("SELECT id FROM invoices WHERE kind = 'customer' ORDER BY id"), 10),
        (ids("SELECT id FROM invoices WHERE kind = 'supplier' ORDER BY total, id"), 4),
    ):
        for inv in t.pick(pool, k, invoice("find_invoice")):
            _ask_invoice_total(t, inv)

    # Supplier invoices: who sent it, when it is due.
    supplier_invoices = ids("SELECT id FROM invoices WHERE kind = 'supplier' ORDER BY id")
    picked = list(t.pick(supplier_invoices, 13, invoice("find_invoice")))
    for n, inv in enumerate(picked):
        if n % 2 == 0:
            _ask_supplier_name(t, inv)
        else:
            _ask_supplier_due(t, inv)

    # Two or three calls: combined totals of two invoices of similar size; the charge
    # that paid an invoice which also has a failed or refunded charge.
    by_total = ids("SELECT id FROM invoices WHERE kind = 'customer' ORDER BY total, id")
    picked = list(t.pick(by_total, 16, invoice("find_invoice")))
    for a, b in zip(picked[0::2], picked[1::2]):
        _ask_combined_total(t, a, b)
    for inv in t.pick(mixed, 5, charged):
        _ask_paying_charge(t, inv)

    # Help articles: the later reminders, and the ids of articles by title. These share
    # articles with other help tasks at times; assign_splits keeps such tasks together.
    for question, pattern in [
        (
            "How many days after an unpaid invoice's due date is the second reminder emailed?",
            r"reminder \d+, (\d+)",
        ),
        (
            "How many days after an unpaid invoice's due date is the last reminder emailed?",
            r"reminder \d+, \d+ and (\d+)",
        ),
    ]:
        _ask_help_days(t, "Late payment reminders", question, pattern, "late payment reminders")
    asked = set().union(*(t.subjects[x["id"]] for x in t.items if x["category"] == "help"))
    titles = [
        title
        for aid, title in conn.execute(
            "SELECT article_id, title FROM help_articles ORDER BY article_id"
        )
        if aid not in asked
        and not any(aid in ids_ for key, ids_ in t.touched.items() if key.startswith("exemplar-"))
    ]
    for title in t.pick(titles, 5, lambda title: _article_search(conn, title)):
        _ask_article_id(t, title)

    # No tool: arithmetic on the lab's amounts, and two more questions about the protocol.
    for expr in [
        "720 * 4",
        "6400 - 1850",
        "4200 / 4",
        "29 * 12",
        "1957.75 + 42.25",
        "48200 / 100",
        "349 * 2",
        "12900 - 2900",
    ]:
        _ask_arithmetic(t, expr)
    for question, gold in [
        ("Which label starts the line on which you think about what to do next?", protocol.THOUGHT),
        ("Which label starts the line that shows a tool's result?", protocol.OBSERVATION),
    ]:
        _ask_protocol(t, question, gold, PROTOCOL_LABELS)


def assign_splits(t: _Tasks, seed: int = SPLIT_SEED) -> None:
    """Give every task a ``split``, ``"dev"`` or ``"test"``: about half each, per category.

    Tasks that share an id (one's subjects among what the other touches) form a group,
    and a group goes to one split whole. Groups that touch an exemplar of
    ``protocol.EXEMPLARS`` go to ``dev``; groups holding a :data:`TEST_PINNED` id go to
    ``test``. The other groups, shuffled by ``random.Random(seed)`` and then taken
    largest first, each go to the split that leaves the counts per stratum (category;
    for yes/no tasks, category and gold answer) most even (ties: the smaller split,
    then the seeded generator). AssertionError if a group is pinned both ways.
    """
    keys = list(t.touched)  # tasks and exemplar pseudo-tasks
    parent = {k: k for k in keys}

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            if t.subjects[a] & t.touched[b] or t.subjects[b] & t.touched[a]:
                parent[root(a)] = root(b)
    groups: dict[str, list[str]] = {}
    for k in keys:
        groups.setdefault(root(k), []).append(k)
    by_id = {task["id"]: task for task in t.items}
    rng = random.Random(seed)
    counts = {split: {} for split in SPLITS}
    order = list(groups.values())
    rng.shuffle(order)
    order.sort(key=len, reverse=True)
    pinned = [
        g
        for g in order
        if any(k.startswith("exemplar-") for k in g)
        or any(set(TEST_PINNED) & t.subjects[k] for k in g)
    ]
    for group in pinned + [g for g in order if g not in pinned]:
        members = [by_id[k] for k in group if k in by_id]
        to_dev = any(k.startswith("exemplar-") for k in group)
        to_test = any(set(TEST_PINNED) & t.subjects[k] for k in group)
        assert not (to_dev and to_test), f"group pinned to both splits: {sorted(group)}"
        if to_dev or to_test:
            split = "dev" if to_dev else "test"
        else:

            def cost(split):
                other = SPLITS[1 - SPLITS.index(split)]
                spread = 0
                for key in {_stratum(m) for m in members}:
                    n = sum(_stratum(m) == key for m in members)
                    spread += abs(counts[split].get(key, 0) + n - counts[other].get(key, 0))
                return spread, sum(counts[split].values())

            costs = {split: cost(split) for split in SPLITS}
            best = min(costs.values())
            split = rng.choice([s for s in SPLITS if costs[s] == best])
        for m in members:
            m["split"] = split
            counts[split][_stratum(m)] = counts[split].get(_stratum(m), 0) + 1


def _stratum(task: dict) -> str:
    """The split balances these: the category, and for yes/no tasks the gold answer too."""
    return task["category"] + (f"/{task['gold']}" if task["kind"] == "yesno" else "")


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
