"""The extended task set: regenerated identically, gold answers from SQL, a clean dev/test split."""

import json
import re
from collections import Counter

import pytest

from react_lab import protocol
from react_lab.lab.builders import build_tasks as bt
from react_lab.lab.experiments.tasks import ORIGINAL_COUNT, TASKS_PATH, load_tasks
from react_lab.tools import call_tool, default_tools, open_db

RAW = json.loads(TASKS_PATH.read_text(encoding="utf-8"))
IDS = re.compile(r"\b(?:cus_\d{4}|INV-\d{4}|ch_[A-Za-z0-9]{6}|sup_\d{3}|pay_\d{4}|KB-\d{2})\b")
#: The original 50 tasks, by category, in file order: they keep their ids and answers.
ORIGINAL = {
    "latest_date": 4,
    "latest_id": 3,
    "invoice_total": 4,
    "invoice_status": 4,
    "count_invoices": 4,
    "charge": 4,
    "duplicate": 5,
    "paid_in_full": 5,
    "amount_paid": 2,
    "help": 5,
    "supplier": 3,
    "multi_step": 3,
    "no_tool": 4,
}


def test_regenerating_writes_the_identical_file(tmp_path):
    first = bt.write_tasks(tmp_path / "a.json").read_bytes()
    second = bt.write_tasks(tmp_path / "b.json").read_bytes()
    assert first == second == TASKS_PATH.read_bytes()


def test_the_original_50_come_first_with_their_ids():
    expected = [f"{cat}-{i:02d}" for cat, n in ORIGINAL.items() for i in range(1, n + 1)]
    assert [d["id"] for d in RAW[:50]] == expected
    assert {d["id"]: d["gold"] for d in RAW}["duplicate-03"] == "no"  # INV-2041: one charge
    assert len(RAW) >= 200 and len({d["id"] for d in RAW}) == len(RAW)
    assert set(Counter(d["category"] for d in RAW)) == set(ORIGINAL)
    assert all(n >= 10 for n in Counter(d["category"] for d in RAW).values())


def _formatted(value, task):
    """The gold string the SQL value should give, by kind (money with 2 decimals)."""
    if task["kind"] == "number":
        return float(value)
    return str(value)


def test_every_gold_answer_is_what_its_sql_selects():
    conn = open_db()
    checked = 0
    for d in RAW:
        sql = d["sql"]
        if sql.startswith("--"):  # read from the protocol's own text
            assert d["gold"] in d["choices"] and d["category"] == "no_tool"
            continue
        query, _, regex = sql.partition("  -- then the regex ")
        value = conn.execute(query, d["params"]).fetchone()[0]
        if regex:
            value = re.search(regex, value).group(1)
        gold = float(d["gold"]) if d["kind"] == "number" else d["gold"]
        assert _formatted(value, d) == gold, d["id"]
        checked += 1
    assert checked >= 190


def test_split_is_about_half_each_within_every_category():
    assert {d["split"] for d in RAW} == {"dev", "test"}
    sizes = Counter(d["split"] for d in RAW)
    assert abs(sizes["dev"] - sizes["test"]) <= 4
    for category in ORIGINAL:
        per = Counter(d["split"] for d in RAW if d["category"] == category)
        assert per["dev"] >= 4 and per["test"] >= 4 and abs(per["dev"] - per["test"]) <= 2, category
    for category in ("duplicate", "paid_in_full"):  # both answers on both sides
        assert {(d["split"], d["gold"]) for d in RAW if d["category"] == category} == {
            (s, g) for s in ("dev", "test") for g in ("yes", "no")
        }


def test_load_tasks_by_split():
    dev, test = load_tasks(split="dev"), load_tasks(split="test")
    assert sorted(t.id for t in dev + test) == sorted(t.id for t in load_tasks(split="all"))
    assert not {t.id for t in dev} & {t.id for t in test}
    assert len(load_tasks(split="test", n=3)) == 3
    with pytest.raises(ValueError, match="unknown split"):
        load_tasks(split="train")


def test_load_tasks_defaults_to_the_original_50():
    original = load_tasks()
    assert len(original) == ORIGINAL_COUNT == 50
    assert [t.id for t in original] == [d["id"] for d in RAW[:50]]
    assert [t.id for t in load_tasks(n=5)] == [d["id"] for d in RAW[:5]]


def _subjects(d) -> set[str]:
    """Ids the question asks about (for 'id of the article titled ...', the article)."""
    ids = set(IDS.findall(d["question"]))
    return ids or ({d["gold"]} if IDS.fullmatch(d["gold"]) else set())


def _shown(d, tools) -> set[str]:
    """Ids a run of the task's oracle shows: question, arguments, observations.

    Customer ids that an observation names as an invoice's or charge's owner are left
    out (as in build_tasks): the owner says nothing about the customer's other invoices.
    """
    shown = set(IDS.findall(d["question"]))
    for tool, args in d["oracle"]:
        text = " ".join(args) + " " + call_tool(tools, tool, list(args)).text
        shown |= {i for i in IDS.findall(text) if not i.startswith("cus_")}
    return shown


def test_no_test_task_is_about_what_an_exemplar_shows():
    exemplar_ids = set(IDS.findall("\n".join(e.render() for e in protocol.EXEMPLARS)))
    assert {"cus_4417", "INV-2088", "INV-2323"} <= exemplar_ids
    tools = default_tools()
    for d in RAW:
        if d["split"] == "test":
            ids = _subjects(d) | {
                i for _, args in d["oracle"] for a in args for i in IDS.findall(a)
            }
            assert not ids & exemplar_ids, d["id"]
            assert not _shown(d, tools) & {
                i for e in protocol.EXEMPLARS for i in IDS.findall(e.question)
            }, d["id"]


def test_no_development_run_shows_a_test_task_subject():
    """An exemplar built from a dev run can never hold a test task's answer (and back)."""
    tools = default_tools()
    dev = [d for d in RAW if d["split"] == "dev"]
    test = [d for d in RAW if d["split"] == "test"]
    dev_shown = set().union(*(_shown(d, tools) for d in dev))
    test_shown = set().union(*(_shown(d, tools) for d in test))
    for d in test:
        assert not _subjects(d) & dev_shown, d["id"]
    for d in dev:
        assert not _subjects(d) & test_shown, d["id"]


def test_the_notebook_scenarios_are_held_out():
    for d in RAW:
        if set(bt.TEST_PINNED) & _subjects(d):
            assert d["split"] == "test", d["id"]
