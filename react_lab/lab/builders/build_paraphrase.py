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
template task it rephrases (``rephrases``) and takes that task's query, params, oracle calls
and answer kind unless it says otherwise; the template task must be in the test half.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

from ...tools import ID_RE, open_db
from ..notebook.gold import PAID_SQL
from .build_injection import without_rows
from .build_tasks import LATEST_SQL, _one

HERE = Path(__file__).resolve().parents[2] / "data"
OUT, SEEDS_OUT, TASKS = HERE / "paraphrase.json", HERE / "seeds.json", HERE / "tasks.json"

#: What is left to pay: the total less the payments (refunds negative), never below 0.
OWED = (
    "SELECT round(max(i.total - coalesce((SELECT sum(amount) FROM payments"
    " WHERE invoice_id = i.id), 0), 0), 2) FROM invoices i WHERE id = ?"
)
#: The opposite of PAID_SQL: is money still owed on the invoice?
OWING = f"SELECT CASE ({PAID_SQL}) WHEN 'yes' THEN 'no' ELSE 'yes' END"

#: (template task rephrased, question): the paraphrase set, by category. A paraphrase asks
#: what its template asks, so it takes the template's query and params (a help article's
#: number: its body, then its regex). One that asks something else is written
#: (template, question, sql, params[, changes]); ``changes`` override what the template
#: gives (``category``, ``kind``, ``unit``, ``oracle``).
PARAPHRASES = [
    # latest_date: a date
    ("latest_date-04", "cus_7577 - when did they last get invoiced?"),
    ("latest_date-05", "date of the newest invoice for cus_1277"),
    ("latest_date-06", "When did cus_1863 receive its most recent invocie?"),
    ("latest_date-07", "latest invoice date for cus_2343?"),
    # latest_id: an id
    ("latest_id-04", "Which invoice did cus_1339 get most recently? Give its id."),
    ("latest_id-05", "give me the id of cus_2164's last invoice"),
    ("latest_id-08", "newest invoice number for cus_4181"),
    ("latest_id-09", "For cus_4746, what is the most recent invoice's id?"),
    # invoice_total: an amount in dollars
    ("invoice_total-02", "how much is inv-1855 for?"),
    ("invoice_total-03", "Total on INV-2263?"),
    ("invoice_total-04", "INV-2246 - total amount in dollars please"),
    ("invoice_total-06", "What does invoice INV-1643 come to?"),
    # invoice_status: one of the statuses
    ("invoice_status-01", "status of INV-1634?"),
    ("invoice_status-03", "What state is invoice INV-2034 in right now?"),
    ("invoice_status-04", "Where does INV-1837 stand?"),
    ("invoice_status-07", "inv-1959 status"),
    # count_invoices: a count
    ("count_invoices-03", "How many invoices has cus_4100 received since May 1, 2026?"),
    ("count_invoices-05", "number of invoices billed to cus_2234 since 2026-05-01"),
    ("count_invoices-07", "Count the invoices issued to cus_3109 from 2026-05-01 on."),
    ("count_invoices-08", "Since 2026-05-01, how many invoices went to cus_5777?"),
    # charge: an amount in dollars, or why it failed
    ("charge-07", "How much did charge ch_9wvXoQ take, in dollars?"),
    ("charge-08", "ch_3nkiuV - amount in dollars?"),
    ("charge-13", "why was ch_2VzSg6 declined?"),
    ("charge-16", "What went wrong with card charge ch_5gHC03?"),
    ("charge-04", "Reason the charge ch_1dXjxv failed?"),
    # duplicate: yes or no (the seed article's question first)
    ("duplicate-03", "Was cus_8812 charged twice for INV-2041 in July?"),
    ("duplicate-01", "Did INV-1715 get double charged?"),
    ("duplicate-04", "Was the customer billed twice for invoice INV-1591?"),
    ("duplicate-05", "any duplicate card charge on INV-1858?"),
    ("duplicate-07", "Check INV-1679 for a double charge: yes or no?"),
    # paid_in_full: yes or no (the seed article's question first)
    ("paid_in_full-01", "Has supplier invoice INV-2291 been paid?"),
    ("paid_in_full-08", "Is INV-2787 settled?"),
    ("paid_in_full-11", "Has INV-1717 been fully paid?"),
    ("paid_in_full-14", "INV-1990: paid in full or not?"),
    ("paid_in_full-16", "is inv-1663 paid up?"),
    ("paid_in_full-09", "Does INV-2766 still have money owing on it?", OWING, ("INV-2766",)),
    # amount_paid: an amount in dollars (paid so far, or still owed)
    ("amount_paid-05", "How much has INV-1784 received in payments so far?"),
    ("amount_paid-06", "total paid to date on INV-1802, in dollars?"),
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
    ("amount_paid-10", "What's been paid against invoice INV-1957 (dollars)?"),
    # help: days read from an article, or an article's id
    ("help-01", "first late-payment reminder: how many days after the due date does it go out?"),
    ("help-02", "If a card payment fails, after how many days is it tried again?"),
    ("help-11", "what's the article id for 'Overpayments'?"),
    ("help-07", "The final reminder for an overdue invoice: how many days after the due date?"),
    # supplier: who sent it, when it is due
    ("supplier-14", "who sent INV-2840?"),
    ("supplier-05", "Due date of supplier invoice INV-2312?"),
    ("supplier-16", "Which vendor billed us on INV-2970?"),
    ("supplier-11", "when do we have to pay INV-2674 by?"),
    # multi_step: two look-ups and a sum, or an invoice followed to its charge
    ("multi_step-07", "INV-1653 plus INV-1661: what do they add up to in dollars?"),
    ("multi_step-08", "Add up invoices INV-1751 and INV-1834 for me (in dollars)."),
    ("multi_step-12", "how many cents did the successful charge on INV-1690 take?"),
    (
        "multi_step-13",
        "In cents, what did the card payment that went through for INV-1709 come to?",
    ),
    # no_tool: arithmetic, no tool needed
    ("no_tool-05", "quick one: 720 times 4?"),
    ("no_tool-12", "what's 12900 minus 2900"),
    ("no_tool-07", "Divide 4200 by 4."),
    ("no_tool-08", "29 x 12 = ?"),
]

#: The seed articles' three questions, as they ask them, written as in :data:`PARAPHRASES`.
SEEDS = [
    ("duplicate-03", "Was cus_8812 charged twice for INV-2041 in July?"),
    (
        None,
        "When was cus_4417's last invoice issued?",
        LATEST_SQL,
        ("cus_4417",),
        {
            "category": "latest_date",
            "kind": "date",
            "oracle": [["list_invoices", ["cus_4417", "2026-07-01"]]],
        },
    ),
    ("paid_in_full-01", "Has supplier invoice INV-2291 been paid?"),
]


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
    if a question that takes its template's query does not name the template's ids, or if
    a query does not select exactly one value.
    """
    conn = without_rows(conn)  # the database before the injection suite's rows
    templates = {t["id"]: t for t in json.loads(TASKS.read_text(encoding="utf-8"))}
    tasks, counts = [], {}
    for entry in entries:
        source, question, *asks = entry
        base = templates[source] if source else {}
        if asks:  # a query of its own
            sql, params, *rest = asks
            changes = rest[0] if rest else {}
        else:  # the template's query, on the template's entities
            sql, params, changes = base["sql"], base["params"], {}
            for i in ID_RE.findall(" ".join(params)):
                assert i.lower() in question.lower(), f"{question!r} does not name {i}"
        if split == "paraphrase":
            assert base.get("split") == "test", (
                f"{source} is not a test task: rephrase test tasks only"
            )
        category = changes.get("category", base.get("category"))
        kind = changes.get("kind", base.get("kind"))
        unit = changes.get("unit", base.get("unit"))
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
