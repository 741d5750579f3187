"""Build the phrasing test sets.

``python -m react_lab.lab.builders.build_paraphrase`` writes two task files.

``paraphrase.json`` -- the **paraphrase** set: questions about the *test* half's entities,
written by hand the ways people ask (terse, imperative, the id first or last, "fully
paid", "settled", "how much is still owed", a typo, a lower-case id...), several per
category. The task set's two halves are written from the same 13 question templates, so
a test question's nearest exemplar is its development twin with other ids; this set asks
the same things in other words. It is never used for tuning: nothing in the exemplar pool,
the exemplar selection or the grammars reads it (``tests/lab/builders/test_paraphrase.py``
checks that no paraphrase question, nor any id of one beside its gold answer, reaches a
prompt).

``seeds.json`` -- the three questions the seed articles ask, as they ask them: the
suspected duplicate charge on INV-2041, cus_4417's latest invoice, the supplier invoice
INV-2291. A demonstration set, not a held-out one: cus_4417's latest invoice is the
worked example of the default prompt (:data:`react_lab.protocol.EXEMPLARS`).

Both are in the format of ``tasks.json`` (:func:`react_lab.lab.experiments.tasks.load_tasks`
documents it), with ``split`` set to ``"paraphrase"`` or ``"seeds"``. As there, every gold
answer is what its SQL selects from the shipped database (run here; none typed in), and
every task carries its oracle calls; ``tests/lab/builders/test_paraphrase.py`` checks that the
oracle scores 100% on both files through the real loop and scorer. A paraphrase task names the
template task it rephrases (``rephrases``) and takes that task's oracle calls and answer
kind unless it says otherwise; the template task must be in the test half.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

from ...tools import open_db
from ..notebook.gold import DUPLICATE_SQL, PAID_SQL

HERE = Path(__file__).resolve().parents[2] / "data"
OUT, SEEDS_OUT, TASKS = HERE / "paraphrase.json", HERE / "seeds.json", HERE / "tasks.json"

LATEST = "SELECT max(issued) FROM invoices WHERE customer_id = ?"
LATEST_ID = "SELECT id FROM invoices WHERE customer_id = ? ORDER BY issued DESC, id DESC LIMIT 1"
TOTAL = "SELECT total FROM invoices WHERE id = ?"
STATUS = "SELECT status FROM invoices WHERE id = ?"
COUNT = "SELECT count(*) FROM invoices WHERE customer_id = ? AND issued >= ?"
CHARGE = "SELECT amount / 100.0 FROM charges WHERE id = ?"
FAILED = "SELECT failure_reason FROM charges WHERE id = ?"
PAID_SO_FAR = "SELECT round(sum(amount), 2) FROM payments WHERE invoice_id = ?"
#: What is left to pay: the total less the payments (refunds negative), never below 0.
OWED = (
    "SELECT round(max(i.total - coalesce((SELECT sum(amount) FROM payments"
    " WHERE invoice_id = i.id), 0), 0), 2) FROM invoices i WHERE id = ?"
)
#: The opposite of PAID_SQL: is money still owed on the invoice?
OWING = f"SELECT CASE ({PAID_SQL}) WHEN 'yes' THEN 'no' ELSE 'yes' END"
SUPPLIER = "SELECT s.name FROM invoices i JOIN suppliers s ON s.id = i.supplier_id WHERE i.id = ?"
DUE = "SELECT due FROM invoices WHERE id = ?"
COMBINED = "SELECT round(sum(total), 2) FROM invoices WHERE id IN (?, ?)"
PAID_BY_CARD = "SELECT amount FROM charges WHERE invoice_id = ? AND status = 'succeeded'"
ARTICLE = "SELECT article_id FROM help_articles WHERE title = ?"

#: (template task rephrased, question, sql, params[, changes]): the paraphrase set, by category.
#: ``sql`` None: the template's query (a help article's number: its body, then its regex).
#: ``changes`` override what the template gives (``category``, ``kind``, ``unit``, ``oracle``).
PARAPHRASES = [
    # latest_date: a date
    ("latest_date-04", "cus_7577 - when did they last get invoiced?", LATEST, ("cus_7577",)),
    ("latest_date-05", "date of the newest invoice for cus_1277", LATEST, ("cus_1277",)),
    ("latest_date-06", "When did cus_1863 receive its most recent invocie?", LATEST, ("cus_1863",)),
    ("latest_date-07", "latest invoice date for cus_2343?", LATEST, ("cus_2343",)),
    # latest_id: an id
    (
        "latest_id-04",
        "Which invoice did cus_1339 get most recently? Give its id.",
        LATEST_ID,
        ("cus_1339",),
    ),
    ("latest_id-05", "give me the id of cus_2164's last invoice", LATEST_ID, ("cus_2164",)),
    ("latest_id-08", "newest invoice number for cus_4181", LATEST_ID, ("cus_4181",)),
    (
        "latest_id-09",
        "For cus_4746, what is the most recent invoice's id?",
        LATEST_ID,
        ("cus_4746",),
    ),
    # invoice_total: an amount in dollars
    ("invoice_total-02", "how much is inv-1855 for?", TOTAL, ("INV-1855",)),
    ("invoice_total-03", "Total on INV-2263?", TOTAL, ("INV-2263",)),
    ("invoice_total-04", "INV-2246 - total amount in dollars please", TOTAL, ("INV-2246",)),
    ("invoice_total-06", "What does invoice INV-1643 come to?", TOTAL, ("INV-1643",)),
    # invoice_status: one of the statuses
    ("invoice_status-01", "status of INV-1634?", STATUS, ("INV-1634",)),
    ("invoice_status-03", "What state is invoice INV-2034 in right now?", STATUS, ("INV-2034",)),
    ("invoice_status-04", "Where does INV-1837 stand?", STATUS, ("INV-1837",)),
    ("invoice_status-07", "inv-1959 status", STATUS, ("INV-1959",)),
    # count_invoices: a count
    (
        "count_invoices-03",
        "How many invoices has cus_4100 received since May 1, 2026?",
        COUNT,
        ("cus_4100", "2026-05-01"),
    ),
    (
        "count_invoices-05",
        "number of invoices billed to cus_2234 since 2026-05-01",
        COUNT,
        ("cus_2234", "2026-05-01"),
    ),
    (
        "count_invoices-07",
        "Count the invoices issued to cus_3109 from 2026-05-01 on.",
        COUNT,
        ("cus_3109", "2026-05-01"),
    ),
    (
        "count_invoices-08",
        "Since 2026-05-01, how many invoices went to cus_5777?",
        COUNT,
        ("cus_5777", "2026-05-01"),
    ),
    # charge: an amount in dollars, or why it failed
    ("charge-07", "How much did charge ch_9wvXoQ take, in dollars?", CHARGE, ("ch_9wvXoQ",)),
    ("charge-08", "ch_3nkiuV - amount in dollars?", CHARGE, ("ch_3nkiuV",)),
    ("charge-13", "why was ch_2VzSg6 declined?", FAILED, ("ch_2VzSg6",)),
    ("charge-16", "What went wrong with card charge ch_5gHC03?", FAILED, ("ch_5gHC03",)),
    ("charge-04", "Reason the charge ch_1dXjxv failed?", FAILED, ("ch_1dXjxv",)),
    # duplicate: yes or no (the seed article's question first)
    (
        "duplicate-03",
        "Was cus_8812 charged twice for INV-2041 in July?",
        DUPLICATE_SQL,
        ("INV-2041",),
    ),
    ("duplicate-01", "Did INV-1715 get double charged?", DUPLICATE_SQL, ("INV-1715",)),
    (
        "duplicate-04",
        "Was the customer billed twice for invoice INV-1591?",
        DUPLICATE_SQL,
        ("INV-1591",),
    ),
    ("duplicate-05", "any duplicate card charge on INV-1858?", DUPLICATE_SQL, ("INV-1858",)),
    (
        "duplicate-07",
        "Check INV-1679 for a double charge: yes or no?",
        DUPLICATE_SQL,
        ("INV-1679",),
    ),
    # paid_in_full: yes or no (the seed article's question first)
    ("paid_in_full-01", "Has supplier invoice INV-2291 been paid?", PAID_SQL, ("INV-2291",)),
    ("paid_in_full-08", "Is INV-2787 settled?", PAID_SQL, ("INV-2787",)),
    ("paid_in_full-11", "Has INV-1717 been fully paid?", PAID_SQL, ("INV-1717",)),
    ("paid_in_full-14", "INV-1990: paid in full or not?", PAID_SQL, ("INV-1990",)),
    ("paid_in_full-16", "is inv-1663 paid up?", PAID_SQL, ("INV-1663",)),
    ("paid_in_full-09", "Does INV-2766 still have money owing on it?", OWING, ("INV-2766",)),
    # amount_paid: an amount in dollars (paid so far, or still owed)
    (
        "amount_paid-05",
        "How much has INV-1784 received in payments so far?",
        PAID_SO_FAR,
        ("INV-1784",),
    ),
    ("amount_paid-06", "total paid to date on INV-1802, in dollars?", PAID_SO_FAR, ("INV-1802",)),
    (
        "invoice_status-12",
        "how much is still owed on INV-2092?",
        OWED,
        ("INV-2092",),
        {
            "category": "amount_paid",
            "kind": "number",
            "unit": "dollars",
            "oracle": [["find_invoice", ["INV-2092"]], ["get_payments", ["INV-2092"]]],
        },
    ),
    (
        "amount_paid-10",
        "What's been paid against invoice INV-1957 (dollars)?",
        PAID_SO_FAR,
        ("INV-1957",),
    ),
    # help: days read from an article, or an article's id
    (
        "help-01",
        "first late-payment reminder: how many days after the due date does it go out?",
        None,
        (),
    ),
    ("help-02", "If a card payment fails, after how many days is it tried again?", None, ()),
    ("help-11", "what's the article id for 'Overpayments'?", ARTICLE, ("Overpayments",)),
    (
        "help-07",
        "The final reminder for an overdue invoice: how many days after the due date?",
        None,
        (),
    ),
    # supplier: who sent it, when it is due
    ("supplier-14", "who sent INV-2840?", SUPPLIER, ("INV-2840",)),
    ("supplier-05", "Due date of supplier invoice INV-2312?", DUE, ("INV-2312",)),
    ("supplier-16", "Which vendor billed us on INV-2970?", SUPPLIER, ("INV-2970",)),
    ("supplier-11", "when do we have to pay INV-2674 by?", DUE, ("INV-2674",)),
    # multi_step: two look-ups and a sum, or an invoice followed to its charge
    (
        "multi_step-07",
        "INV-1653 plus INV-1661: what do they add up to in dollars?",
        COMBINED,
        ("INV-1653", "INV-1661"),
    ),
    (
        "multi_step-08",
        "Add up invoices INV-1751 and INV-1834 for me (in dollars).",
        COMBINED,
        ("INV-1751", "INV-1834"),
    ),
    (
        "multi_step-12",
        "how many cents did the successful charge on INV-1690 take?",
        PAID_BY_CARD,
        ("INV-1690",),
    ),
    (
        "multi_step-13",
        "In cents, what did the card payment that went through for INV-1709 come to?",
        PAID_BY_CARD,
        ("INV-1709",),
    ),
    # no_tool: arithmetic, no tool needed
    ("no_tool-05", "quick one: 720 times 4?", "SELECT 720 * 4", ()),
    ("no_tool-12", "what's 12900 minus 2900", "SELECT 12900 - 2900", ()),
    ("no_tool-07", "Divide 4200 by 4.", "SELECT 4200 / 4", ()),
    ("no_tool-08", "29 x 12 = ?", "SELECT 29 * 12", ()),
]

#: The seed articles' three questions, as they ask them (template, question, sql, params).
SEEDS = [
    (
        "duplicate-03",
        "Was cus_8812 charged twice for INV-2041 in July?",
        DUPLICATE_SQL,
        ("INV-2041",),
    ),
    (
        None,
        "When was cus_4417's last invoice issued?",
        LATEST,
        ("cus_4417",),
        {
            "category": "latest_date",
            "kind": "date",
            "oracle": [["list_invoices", ["cus_4417", "2026-07-01"]]],
        },
    ),
    ("paid_in_full-01", "Has supplier invoice INV-2291 been paid?", PAID_SQL, ("INV-2291",)),
]


def _one(conn: sqlite3.Connection, sql: str, params: tuple):
    rows = conn.execute(sql, params).fetchall()
    assert len(rows) == 1 and len(rows[0]) == 1, f"expected one value from {sql!r} {params}"
    return rows[0][0]


def _gold(value, kind: str, unit: str | None) -> str:
    """The gold as ``tasks.json`` writes it: money with two decimals, counts and days whole."""
    if kind == "number" and unit in ("dollars",):
        return f"{float(value):.2f}"
    if kind == "number":
        return f"{value:g}" if isinstance(value, float) else str(value)
    return str(value)


def build(conn: sqlite3.Connection, entries: list, split: str, prefix: str) -> list[dict]:
    """Return the tasks of ``entries`` as JSON-ready dicts, gold answers from ``conn``.

    AssertionError if a rephrased template is not a test task (for ``split="paraphrase"``),
    or a query does not select exactly one value.
    """
    templates = {t["id"]: t for t in json.loads(TASKS.read_text(encoding="utf-8"))}
    tasks, counts = [], {}
    for entry in entries:
        source, question, sql, params, *rest = entry
        changes = rest[0] if rest else {}
        base = templates[source] if source else {}
        if split == "paraphrase":
            assert base.get("split") == "test", (
                f"{source} is not a test task: rephrase test tasks only"
            )
        category = changes.get("category", base.get("category"))
        kind = changes.get("kind", base.get("kind"))
        unit = changes.get("unit", base.get("unit"))
        if sql is None:  # the template's query, and its regex when it reads a number from text
            sql, params = base["sql"], base["params"]
        value = _one(conn, sql.split("  -- then the regex ")[0], tuple(params))
        if "  -- then the regex " in sql:
            value = re.search(sql.split("  -- then the regex ")[1], value).group(1)
        counts[category] = counts.get(category, 0) + 1
        task = {
            "id": f"{prefix}-{category}-{counts[category]:02d}",
            "category": category,
            "question": question,
            "gold": _gold(value, kind, unit),
            "kind": kind,
        }
        if unit:
            task["unit"] = unit
        if base.get("choices") and kind == base.get("kind"):
            task["choices"] = base["choices"]
        task.update(
            oracle=changes.get("oracle", base.get("oracle", [])),
            sql=sql,
            params=list(params),
            split=split,
        )
        if source:
            task["rephrases"] = source
        tasks.append(task)
    return tasks


def write(
    out: str | Path = OUT, seeds_out: str | Path = SEEDS_OUT, db: str | Path | None = None
) -> tuple[Path, Path]:
    """Build both files from the shipped database (or ``db``) and write them; return their paths."""
    conn = open_db(db)
    try:
        sets = [
            (Path(out), build(conn, PARAPHRASES, "paraphrase", "para")),
            (Path(seeds_out), build(conn, SEEDS, "seeds", "seed")),
        ]
    finally:
        conn.close()
    for path, tasks in sets:
        path.write_text(json.dumps(tasks, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return sets[0][0], sets[1][0]


if __name__ == "__main__":  # pragma: no cover
    paths = write(*sys.argv[1:3]) if len(sys.argv) > 2 else write()
    for path in paths:
        print(f"wrote {len(json.loads(path.read_text()))} tasks to {path}")
