"""The task set (deterministic, gold answers recomputed by independent SQL) and the scorer."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from react_lab.lab.agent.loop import ask
from react_lab.lab.builders.build_tasks import build_tasks
from react_lab.lab.experiments import evals
from react_lab.lab.experiments.tasks import (
    MAX_ANSWER_CHARS,
    TASKS_PATH,
    Task,
    dates_in,
    load_tasks,
    numbers_in,
    score,
)
from react_lab.tools import default_tools, open_db

TASKS = load_tasks()


# --------------------------------------------------------------------------- the task set


def test_task_set_is_deterministic_and_matches_the_committed_file():
    conn = open_db()
    assert build_tasks(conn) == build_tasks(conn)
    committed = json.loads(TASKS_PATH.read_text(encoding="utf-8"))
    assert build_tasks(conn) == committed, (
        "tasks.json is stale: python -m react_lab.lab.builders.build_tasks"
    )


def test_task_set_shape():
    assert len(TASKS) >= 50
    assert len({t.id for t in TASKS}) == len(TASKS)
    categories = {t.category for t in TASKS}
    assert {
        "count_invoices",
        "latest_date",
        "duplicate",
        "paid_in_full",
        "help",
        "no_tool",
        "multi_step",
    } <= categories
    assert sum(not t.oracle for t in TASKS) >= 3  # answerable without a tool
    assert sum(len(t.oracle) >= 2 for t in TASKS) >= 5  # two or three calls
    assert {t.gold for t in TASKS if t.kind == "yesno"} == {"yes", "no"}
    tools = default_tools()
    assert all(tool in tools for t in TASKS for tool, _ in t.oracle)
    # No exemplar question (or its customer / invoice) is in the set: it could be copied.
    from react_lab.protocol import EXEMPLARS

    assert not {e.question for e in EXEMPLARS} & {t.question for t in TASKS}
    assert not [t.id for t in TASKS if "cus_4417" in t.question or "INV-2323" in t.question]


def test_gold_answers_recomputed_by_independent_sql():
    """Recompute a sample of gold answers from raw rows, with different queries and Python."""
    conn = open_db()
    by_id = {t.id: t for t in TASKS}
    checked = 0
    for t in TASKS:
        cus = next(iter(re.findall(r"cus_\d+", t.question)), None)
        inv = next(iter(re.findall(r"INV-\d+", t.question)), None)
        if t.category == "latest_date":
            rows = [
                r[0]
                for r in conn.execute("SELECT issued FROM invoices WHERE customer_id = ?", (cus,))
            ]
            assert t.gold == sorted(rows)[-1]
        elif t.category == "count_invoices":
            rows = conn.execute("SELECT id, issued FROM invoices WHERE customer_id = ?", (cus,))
            assert int(t.gold) == len({i for i, d in rows if d >= "2026-05-01"})
        elif t.category == "duplicate":
            statuses = [
                r[0]
                for r in conn.execute("SELECT status FROM charges WHERE invoice_id = ?", (inv,))
            ]
            assert t.gold == ("yes" if statuses.count("succeeded") >= 2 else "no")
        elif t.category == "paid_in_full":
            total = conn.execute("SELECT total FROM invoices WHERE id = ?", (inv,)).fetchone()[0]
            paid = sum(
                r[0]
                for r in conn.execute("SELECT amount FROM payments WHERE invoice_id = ?", (inv,))
            )
            assert t.gold == ("yes" if paid >= total - 0.005 else "no")
        elif t.category == "invoice_total":
            assert (
                float(t.gold)
                == conn.execute("SELECT total FROM invoices WHERE id = ?", (inv,)).fetchone()[0]
            )
        else:
            continue
        checked += 1
    assert checked >= 20
    assert by_id["count_invoices-01"].gold == "4"  # cus_8812: INV-2041 listed twice, counted once


def test_oracle_calls_surface_the_gold_answer():
    """Every tool task is answerable from its oracle's observations (literal kinds)."""
    tools = default_tools()
    for t in TASKS:
        if not t.oracle or t.kind not in ("date", "id", "choice", "text"):
            continue
        result = ask(t.question, evals.oracle_model(t), tools)
        observations = " ".join(s.observation or "" for s in result.steps)
        assert t.gold.lower() in observations.lower(), t.id


# --------------------------------------------------------------------------- the scorer


def _task(gold, kind, unit=None, choices=()):
    return Task(
        id="x", category="x", question="q", gold=gold, kind=kind, unit=unit, choices=tuple(choices)
    )


STATUSES = ("open", "past_due", "partially_paid", "paid", "refunded")
DUPLICATE = Task(
    id="d",
    category="duplicate",
    gold="no",
    kind="yesno",
    question="Was invoice INV-2041 charged twice, with two succeeded card charges?",
)
DUPLICATE_YES = Task(
    id="d",
    category="duplicate",
    gold="yes",
    kind="yesno",
    question="Was invoice INV-1715 charged twice, with two succeeded card charges?",
)
PAID = Task(
    id="p",
    category="paid_in_full",
    question="Has invoice INV-2291 been paid in full?",
    gold="no",
    kind="yesno",
)


@pytest.mark.parametrize(
    "answer,task,ok",
    [
        # numbers: formats and units
        ("129", _task("129.00", "number", "dollars"), True),
        ("129.0", _task("129.00", "number", "dollars"), True),
        ("The total is $129.00.", _task("129.00", "number", "dollars"), True),
        ("129 dollars", _task("129.00", "number", "dollars"), True),
        ("12900 cents", _task("129.00", "number", "dollars"), True),
        ("$48,200.00", _task("48200.00", "number", "dollars"), True),
        ("12900", _task("129.00", "number", "dollars"), False),  # bare cents are not dollars
        ("$12.90", _task("129.00", "number", "dollars"), False),
        ("INV-0129 is unpaid", _task("129.00", "number", "dollars"), False),  # digits of an id
        ("$129.00", _task("12900", "number", "cents"), True),
        ("129", _task("12900", "number", "cents"), False),
        ("4 invoices", _task("4", "number", "count"), True),
        ("four invoices", _task("4", "number", "count"), False),  # digits only
        ("no action found; write one line", _task("1", "number", "count"), False),
        ("5 rows, issued 2026-07-04", _task("4", "number", "count"), False),  # a date's digits
        # a timestamp's digits
        ("emailed 2026-07-14T08:10:47", _task("7", "number", "count"), False),
        ("sent at 08:10:47Z", _task("10", "number", "count"), False),  # a time's digits
        ("2 sends, at 08:10 and 09:30", _task("2", "number", "count"), True),
        ("[best effort] 60 days", _task("60", "number", "days"), True),  # the loop's tag is ignored
        # dates
        ("2026-07-14", _task("2026-07-14", "date"), True),
        ("It was issued on July 14, 2026.", _task("2026-07-14", "date"), True),
        ("14 July 2026", _task("2026-07-14", "date"), True),
        ("on the 14th of July, 2026", _task("2026-07-14", "date"), True),
        ("Jul 14th 2026", _task("2026-07-14", "date"), True),
        ("issued 2026-07-14T08:10:47", _task("2026-07-14", "date"), True),  # a timestamp's date
        ("2026-07-15", _task("2026-07-14", "date"), False),
        ("July 14", _task("2026-07-14", "date"), False),  # no year
        ("07/14/2026", _task("2026-07-14", "date"), False),  # slashes are ambiguous
        # ids
        ("inv-2041", _task("INV-2041", "id"), True),
        ("The latest is INV 2041.", _task("INV-2041", "id"), True),
        ("INV-20411", _task("INV-2041", "id"), False),
        ("INV-2014", _task("INV-2041", "id"), False),
        ("cus_2041", _task("INV-2041", "id"), False),
        # yes / no: the answer begins with it, as a word of its own
        ("Yes, it was charged twice.", _task("yes", "yesno"), True),
        ("true", _task("yes", "yesno"), True),
        ("No, only once.", _task("yes", "yesno"), False),
        ("It was charged twice.", _task("yes", "yesno"), False),  # says neither
        ("No.", _task("no", "yesno"), True),
        ("[best effort] No", _task("no", "yesno"), True),
        ("Yes. There is no second charge.", _task("no", "yesno"), False),
        ("I don't know.", _task("no", "yesno"), False),
        ("The loop allows no more tool calls", _task("no", "yesno"), False),  # an echo of the loop
        ("no action and no answer found", _task("no", "yesno"), False),
        # yes / no that also states the opposite: wrong
        ("no, the invoice was charged twice, with two successful card charges", DUPLICATE, False),
        (
            "no, the invoice was charged twice, with two successful card charges, "
            "but only once with the second successful charge.",
            DUPLICATE,
            False,
        ),
        (
            "No, the invoice was not charged twice with two successful card charges.",
            DUPLICATE,
            True,
        ),
        ("No, only one succeeded charge; the invoice was emailed twice.", DUPLICATE, True),
        ("Yes, there is no duplicate charge.", DUPLICATE_YES, False),
        ("Yes, INV-1715 was charged twice.", DUPLICATE_YES, True),
        ("No, it is fully paid.", PAID, False),
        ("No, the invoice INV-2291 has not been paid in full.", PAID, True),
        ("No. INV-2323 (720.00 dollars) is approved but unpaid.", PAID, True),
        ("Yes, it is unpaid.", _task("yes", "yesno"), False),  # a question naming neither topic
        # yes / no as a sentence: the stance taken on the question's own predicate
        ("Supplier invoice INV-2291 has not been paid.", PAID, True),
        ("INV-2291 is unpaid.", PAID, True),
        ("INV-2291 has been paid.", PAID, False),
        ("INV-2291 is unpaid, although it is paid.", PAID, False),  # both: contradicts itself
        ("INV-2291 was approved on July 25.", PAID, False),  # no stance
        ("The latest invoice of cus_4417 is unpaid.", PAID, False),  # about another subject
        (
            "INV-1860 is fully paid off.",
            Task(
                id="p",
                category="paid_in_full",
                gold="yes",
                kind="yesno",
                question="Is INV-1860 fully paid off?",
            ),
            True,
        ),
        ("INV-2041 did not get two successful card charges.", DUPLICATE, True),
        ("INV-1591 did not get two successful card charges.", DUPLICATE, False),  # another invoice
        (
            "INV-1591 did not get two successful card charges.",
            Task(
                id="d",
                category="duplicate",
                gold="no",
                kind="yesno",
                question="Was invoice INV-1591 charged twice, with two succeeded card charges?",
            ),
            True,
        ),
        ("INV-2041 was charged once.", DUPLICATE, True),
        ("INV-2041 was charged twice.", DUPLICATE, False),
        ("INV-1715 was charged twice.", DUPLICATE_YES, True),
        ("It was charged twice.", _task("yes", "yesno"), False),  # a question naming neither
        # a number beside another for the same quantity: a hedge
        ("58.00 or 129.00 dollars", _task("58.00", "number", "dollars"), False),
        ("either 3 days or 7 days", _task("3", "number", "days"), False),
        ("$58.00 (maybe $129.00)", _task("58.00", "number", "dollars"), False),
        # one amount, twice
        ("12900 cents (129.00 dollars)", _task("129.00", "number", "dollars"), True),
        ("174.50 dollars, out of 349.00 dollars", _task("174.50", "number", "dollars"), True),
        ("4200.0 dollars\n\nExample 4:", _task("4200.00", "number", "dollars"), True),
        # choices: longest match first
        ("It is paid.", _task("paid", "choice", choices=STATUSES), True),
        ("It is partially paid.", _task("paid", "choice", choices=STATUSES), False),
        ("PAST_DUE", _task("past_due", "choice", choices=STATUSES), True),
        ("past due", _task("past_due", "choice", choices=STATUSES), True),
        ("open, not past due", _task("past_due", "choice", choices=STATUSES), False),  # negated
        ("open, not past due", _task("open", "choice", choices=STATUSES), True),
        ("open or past due", _task("open", "choice", choices=STATUSES), False),  # a hedge
        (
            "No. The status of INV-2041 is not open.",
            _task("open", "choice", choices=STATUSES),
            False,
        ),
        ("It isn't paid; it is refunded", _task("refunded", "choice", choices=STATUSES), True),
        ("It is no longer open.", _task("open", "choice", choices=STATUSES), False),
        ("It is past due, and past due again", _task("past_due", "choice", choices=STATUSES), True),
        (
            "no action found; write 'Action: x' or 'Answer: y'",
            _task("action", "choice", choices=("thought", "action", "observation", "answer")),
            False,
        ),
        # text
        ("bluequill payroll services.", _task("Bluequill Payroll Services", "text"), True),
        ("Bluequill", _task("Bluequill Payroll Services", "text"), False),
        # any kind: nothing, or a dump
        (None, _task("4", "number", "count"), False),
        ("   ", _task("4", "number", "count"), False),
        ("4 " * 200, _task("4", "number", "count"), False),
    ],
)
def test_score(answer, task, ok):
    assert score(answer, task) is ok


def test_score_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match="unknown task kind"):
        score("x", _task("x", "colour"))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.sampled_from(TASKS))
def test_score_never_raises_on_model_text(answer, task):
    verdict = score(answer, task)
    if (
        answer
        and answer[0] != "["
        and not answer[0].isspace()
        and len(answer) + 14 <= MAX_ANSWER_CHARS
    ):
        assert score(f"[best effort] {answer}", task) is verdict  # the loop's label changes nothing
    # a dump of text is never an answer
    assert score(answer + " " * MAX_ANSWER_CHARS, task) is False


def test_dates_and_numbers_in():
    assert dates_in("from 2026-07-14 to 1 Aug 2026, not 2026-02-30") == ["2026-07-14", "2026-08-01"]
    assert numbers_in("INV-2041: $1,850.50 and 12900 cents on 2026-07-03") == [
        (1850.5, "dollars"),
        (12900.0, "cents"),
    ]


def test_notebook_08s_self_contradicting_answers_are_wrong_now():
    """The three native answers that made notebook 08's native duplicate bar.

    Each says no, then yes.
    """
    from react_lab.lab.experiments.tasks import load_tasks

    task = {t.id: t for t in load_tasks()}["duplicate-03"]
    assert not score("no, the invoice was charged twice, with two successful card charges", task)
    assert score("No.", task) and score("[best effort] No, charged once.", task)
