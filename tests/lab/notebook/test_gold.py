"""Gold answers from the database for the notebooks' own question.

And the reasons a run missed it.
"""

import pytest

from react_lab.lab.experiments.tasks import score
from react_lab.lab.notebook.gold import check_charges, why_wrong
from react_lab.tools import open_db

QUESTION = "Was cus_8812 charged twice for INV-2041 in July?"


def test_inv_2041_was_charged_once_and_is_listed_twice():
    check = check_charges("INV-2041")
    assert [c["id"] for c in check.succeeded] == ["ch_1KZq8f"]
    assert check.gold == "no" and len(check.sends) == 2
    text = check.explain()
    assert "charged once" in text and "listed 2 times" in text and "resend" in text


def test_the_gold_agrees_with_the_evaluation_sets_sql_for_every_invoice():
    conn = open_db()
    ids = [r[0] for r in conn.execute("SELECT DISTINCT invoice_id FROM charges")]
    twice = 0
    for invoice_id in ids:
        check = check_charges(invoice_id, conn)
        assert check.gold == conn.execute(check.task("q").sql, (invoice_id,)).fetchone()[0]
        twice += check.gold == "yes"
    assert twice > 0  # the set has real duplicates, so both branches ran


def test_a_duplicate_is_explained_as_charged_twice():
    conn = open_db()
    inv = conn.execute(
        "SELECT invoice_id FROM charges WHERE status = 'succeeded' GROUP BY invoice_id "
        "HAVING count(*) = 2 LIMIT 1"
    ).fetchone()[0]
    check = check_charges(inv, conn)
    assert check.gold == "yes" and "charged twice" in check.explain()


def test_the_task_scores_answers_like_the_evaluation():
    task = check_charges("INV-2041").task(QUESTION)
    assert score("No. It was charged once; the invoice was emailed twice.", task)
    assert not score("Yes, twice.", task)
    assert not score("The latest invoice of cus_8812 was charged twice for INV-2116.", task)


def test_an_unknown_invoice_is_a_clear_error():
    with pytest.raises(KeyError, match="INV-0000"):
        check_charges("INV-0000")


def test_why_wrong_names_the_copied_date_the_missing_invoice_and_the_own_question():
    why = why_wrong(
        QUESTION,
        "INV-2116 was charged twice.",
        needed="INV-2041",
        calls=[("list_invoices", ["cus_8812", "2026-07-14"])],
        observations=['[{"invoice_id": "INV-2116"}]'],
        written=[
            " x\nAction: list_invoices[cus_8812, 2026-07-14]",
            " y\nAnswer: no\n\nQuestion: When was it?",
        ],
    )
    # every place the exemplar shows the date, and not its call, which passed another
    assert "copied 2026-07-14 from the exemplar's observation, last thought and answer" in why
    assert "(the exemplar's own call was list_invoices[cus_4417, 2026-07-01])" in why
    assert "INV-2041 never appeared in an observation" in why
    assert "about INV-2116" in why and "Question: line of its own" in why


def test_why_wrong_does_not_blame_copying_when_the_invoice_was_fetched():
    # 2026-07-01 is also in the exemplar, but this call did bring INV-2041 back.
    why = why_wrong(
        QUESTION,
        "Yes.",
        needed="INV-2041",
        calls=[("list_invoices", ["cus_8812", "2026-07-01"])],
        observations=['[{"invoice_id": "INV-2041"}]'],
        written=[" Answer: Yes."],
    )
    assert why == ""
    assert "without calling a tool" in why_wrong(QUESTION, "No.", needed="INV-2041")
    assert "gave no answer" in why_wrong(
        QUESTION,
        None,
        needed="INV-2041",
        calls=[("get_charge", ["ch_1KZq8f"])],
        observations=["INV-2041 ..."],
    )


def test_judge_scores_a_run_and_says_why_it_missed():
    from react_lab.lab.agent.loop import ask
    from react_lab.lab.backends.scripted import ScriptedModel
    from react_lab.lab.notebook.gold import judge
    from react_lab.tools import default_tools

    wrong = ask(
        QUESTION,
        ScriptedModel(
            [
                " I list.\nAction: list_invoices[cus_8812, 2026-07-14]",
                " Done.\nAnswer: INV-2116 was charged twice.\nQuestion: x",
            ]
        ),
        default_tools(),
    )
    verdict = judge(QUESTION, wrong.steps, check_charges("INV-2041"))
    assert not verdict.right and verdict.gold == "no"
    assert "copied 2026-07-14" in verdict.why and "scored        : wrong" in str(verdict)
    right = ask(
        QUESTION,
        ScriptedModel(
            [
                " I list.\nAction: list_invoices[cus_8812, 2026-07-01]",
                " Done.\nAnswer: No, it was charged once.",
            ]
        ),
        default_tools(),
    )
    verdict = judge(QUESTION, right.steps, check_charges("INV-2041"))
    assert verdict.right and verdict.why == "" and "right" in str(verdict)


# Notebook 01's completions, as the embedded model writes them (greedy), and 02's first run.
BY_HAND = [
    " I need to know if cus_8812 was charged twice for INV-2041 in July.\n"
    "Action: list_invoices[cus_8812, 2026-07-14]",
    " The latest invoice of cus_8812 was charged twice for INV-2116, issued on July 22, "
    "2026.\nAnswer: The latest invoice of cus_8812 was charged twice for INV-2116, issued "
    "on July 22, 2026.\n\nQuestion: When was cus_8812 issued?\nThought: I need to know "
    "when cus_8812 was issued.\nAction: list_invoices[cus_8812, 202",
]


def test_judge_run_reads_the_answer_and_the_calls_of_a_run_by_hand():
    from react_lab.lab.notebook.gold import judge_run
    from react_lab.tools import call_tool, default_tools

    observation = call_tool(default_tools(), "list_invoices", ["cus_8812", "2026-07-14"]).text
    verdict = judge_run(QUESTION, BY_HAND, [observation], check_charges("INV-2041"))
    assert verdict.answer.startswith("The latest invoice of cus_8812 was charged twice")
    assert not verdict.right and verdict.gold == "no"
    # the call is the first completion's action line; the cut-off one after Answer: is not
    assert (
        "copied 2026-07-14 from the exemplar's observation, last thought and answer into "
        "list_invoices[cus_8812, 2026-07-14]" in verdict.why
    )
    assert "It also wrote a Question: line of its own" in verdict.why
    assert str(verdict).splitlines()[0].startswith("model's answer: The latest invoice")


def test_judge_loop_shows_the_run_and_says_no_answer_line_was_written():
    from react_lab.agent import run_loop  # calls the reference observe
    from react_lab.lab.backends.scripted import ScriptedModel
    from react_lab.lab.notebook.gold import invoice_paid, judge_loop, run_of, run_parts
    from react_lab.tools import default_tools

    question = "Has supplier invoice INV-2291 been paid?"
    first = " I need the invoice of cus_2291.\nAction: list_invoices[cus_2291, 2026-07-14]"
    again = (
        " The invoice of cus_2291 is not paid.\n\nQuestion: When was the latest invoice of "
        "cus_2291 issued?\nThought: I need it.\nAction: list_invoices[cus_2291, 2026-07-14]"
    )
    model = ScriptedModel([first, again, again])
    answer, transcript = run_loop(question, model, default_tools(), max_steps=3)
    texts, observations = run_parts(question, transcript)
    assert texts == [first, again, again] and observations == ["[]"] * 3
    assert run_of(question, transcript).startswith(f"Question: {question}\nThought: I need")
    verdict = judge_loop(question, answer, transcript, invoice_paid("INV-2291"))
    shown = str(verdict)
    assert shown.startswith(f"Question: {question}") and "model's answer: none" in shown
    assert "gold answer   : no - INV-2291 (supplier, 48200.00 dollars" in shown
    assert "it wrote no Answer: line" in verdict.why and "Question: line of its own" in verdict.why
    assert "copied 2026-07-14 from the exemplar's observation, last thought and answer" in (
        verdict.why
    )


def test_run_of_skips_an_exemplar_with_the_same_question():
    from react_lab.lab.notebook.gold import run_of
    from react_lab.protocol import EXEMPLARS, build_prompt
    from react_lab.tools import default_tools

    question = EXEMPLARS[1].question
    prompt = build_prompt(question, default_tools().values(), [EXEMPLARS[1]])
    assert run_of(question, prompt + " x") == f"Question: {question}\nThought: x"


def test_why_wrong_names_every_place_the_exemplar_shows_a_copied_value():
    why = why_wrong(
        QUESTION,
        None,
        needed="INV-2041",
        calls=[("list_invoices", ["cus_4417", "2026-07-01"])],
        observations=["[]"],
        written=[" x\nAction: list_invoices[cus_4417, 2026-07-01]"],
    )
    assert "copied cus_4417 from the exemplar's question, thought, call and answer" in why
