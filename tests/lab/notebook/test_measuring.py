"""Notebook 08's pieces.

The learner's loop on gold-answer tasks, a rate and a paired change, the seeds' reports.
"""

from react_lab import agent as solutions
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.tools import default_tools
from react_lab.workshop.agent_file import _rebind
from react_lab.workshop.measuring import (
    dev_pool,
    gold_reason,
    ladder_change,
    live_tasks,
    paired,
    rate,
    run_tasks,
    seed_report,
    seed_tasks,
    side_by_side,
)

TOOLS = default_tools()
LOOP = _rebind(solutions.run_loop_guards, vars(solutions), "run_loop")


def test_the_live_set_is_one_test_question_of_each_of_eight_categories():
    tasks = live_tasks()
    assert len(tasks) == 8 and len({t.category for t in tasks}) == 8
    assert all(t.gold for t in tasks)


def test_run_tasks_scores_each_answer_and_shows_the_picked_exemplar():
    seeds = {t.id: t for t in seed_tasks()}
    task = seeds["seed-paid_in_full-01"]
    said = []
    before = run_tasks(
        LOOP,
        [task],
        ScriptedModel(
            [
                " I look.\nAction: find_invoice[INV-2291]",
                " Its payments.\nAction: get_payments[INV-2291]",
                " None.\nAnswer: Yes.",
            ]
        ),
        TOOLS,
    )
    after = run_tasks(
        LOOP,
        [task],
        ScriptedModel([" None.\nAnswer: It has not been paid."]),
        TOOLS,
        pick=lambda q, pool: said.append(q) or pool[0],
        pool=dev_pool(),
    )
    assert not before[task.id].right and after[task.id].right and said == [task.question]
    assert after[task.id].exemplars == [dev_pool()[0]]
    assert before[task.id].calls()[1][:2] == ("get_payments", "INV-2291")
    assert '"payments": []' in before[task.id].calls()[1][2]  # what came back
    assert str(rate(after)).startswith("1/1 = 100%")
    assert (paired(before, after).gained, paired(before, after).lost) == (1, 0)
    report = seed_report(before[task.id])
    assert "called find_invoice[INV-2291] -> get_payments[INV-2291]" in report
    assert "answered 'Yes.': WRONG" in report and "gold answer: no" in report


def test_gold_reasons_come_from_the_database():
    reasons = {t.id: gold_reason(t) for t in seed_tasks()}
    assert (
        "INV-2041" in reasons["seed-duplicate-01"]
        and "charged once" in reasons["seed-duplicate-01"]
    )
    assert "INV-2088, issued 2026-07-14" in reasons["seed-latest_date-01"]
    assert "0.00 dollars of payments" in reasons["seed-paid_in_full-01"]


def test_the_ladder_change_is_labelled_with_its_files():
    text = ladder_change("baseline", "pool_k1")
    assert text.startswith("files ladder-test-baseline and ladder-test-pool_k1 (52 test questions")
    assert "paired   +" in text


def test_side_by_side_puts_both_loops_beside_bests_stored_answers():
    from react_lab.lab.backends.chat import ScriptedChatModel
    from react_lab.lab.experiments.ladder import load_results

    tasks = live_tasks()[:3]
    text = run_tasks(LOOP, tasks, ScriptedModel([f" I know.\nAnswer: {tasks[0].gold}"]), TOOLS)
    native_loop = _rebind(solutions.run_native, vars(solutions), "run_native")
    chat = ScriptedChatModel([{"thought": "I cannot tell.", "answer": "I don't know."}])
    native = run_tasks(
        native_loop, tasks, chat, TOOLS, pick=lambda q, pool: pool[0], pool=dev_pool()
    )
    table = side_by_side(text, native).splitlines()
    [best] = load_results(["ladder-test-best"])
    stored = {t.id: best["outcomes"][t.id][0] for t in tasks}
    assert table[0].split() == [
        "question",
        "reference",
        "run_loop",
        "reference",
        "run_native",
        "best",
    ]
    for line, task in zip(table[1:4], tasks):
        marks = line.split()
        assert marks[0] == task.id
        assert marks[1:] == [
            "✓" if text[task.id].right else "✗",
            "✗",  # "I don't know." is never right
            "✓" if stored[task.id] else "✗",
        ]
    assert text[tasks[0].id].right  # the scripted answer is the first task's gold
    rates = "\n".join(table[5:])
    assert "reference run_native  0/3 = 0%" in rates
    assert f"best                  {sum(stored.values())}/3 = " in rates
    assert (
        "best is the file ladder-test-best (computed " in rates
        and "on its 52 test questions" in rates
    )


def test_side_by_side_says_whose_loop_ran():
    def run_loop(question, model, tools, exemplars=None, max_steps=4):  # a learner's own
        return "4", ""

    tasks = live_tasks()[:1]
    mine = run_tasks(run_loop, tasks, None, TOOLS)
    assert side_by_side(mine, mine).splitlines()[0].split()[1:5] == [
        "your",
        "run_loop",
        "your",
        "run_native",
    ]


def test_a_seed_report_names_an_id_a_call_copied_from_the_picked_exemplar():
    """Seed 000's cus_4417 question, its picked exemplar about cus_1021: a read-only call of
    that id runs (the provenance guard lets it), and the report says where the id came from."""
    task = {t.id: t for t in seed_tasks()}["seed-latest_date-01"]
    pick = solutions.pick_exemplar(task.question, dev_pool())
    assert "cus_1021" in pick.render() and "cus_1021" not in task.question
    script = [
        " I list them.\nAction: list_invoices[cus_4417, 2026-01-01]",
        " And the example's.\nAction: list_invoices[cus_1021, 2026-01-01]",
        " I know.\nAnswer: 2026-07-05",
    ]
    pick_run = run_tasks(
        LOOP, [task], ScriptedModel(script), TOOLS, pick=lambda q, pool: pick, pool=dev_pool()
    )
    report = seed_report(pick_run[task.id])
    assert "WRONG" in report
    assert "list_invoices[cus_1021, 2026-01-01] has cus_1021, its exemplar's" in report
    assert "cus_4417, 2026-01-01] has" not in report  # the question's id, and a date, are no copy
