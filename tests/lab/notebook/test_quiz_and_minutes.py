"""The check-yourself quizzes and the minutes helper of the core notebooks."""

import json
import re

import pytest

from react_lab.workshop import minutes as nbminutes
from react_lab.workshop.quiz import QUIZZES, grade, make_quiz_widget, quiz


def test_every_quiz_has_two_or_three_questions_whose_right_answer_is_a_choice():
    assert sorted(QUIZZES) == ["01", "02", "03", "04", "05", "06", "07", "08"]
    for number, questions in QUIZZES.items():
        assert len(questions) in (2, 3), number
        for q in questions:
            assert len(q.choices) >= 2 and 0 <= q.right < len(q.choices) and q.why, (number, q.text)


#: Words that hedge a choice ("only", "may"): the one hedged choice reads as the careful one.
HEDGES = re.compile(r"\b(only|may|might|can|could|often|usually|sometimes)\b", re.I)


@pytest.mark.parametrize("number", sorted(QUIZZES))
def test_the_right_answer_is_given_away_neither_by_length_nor_by_position_nor_by_hedging(number):
    questions = QUIZZES[number]
    for q in questions:
        longest = max(len(c) for c in q.choices)
        assert (
            len(q.choices[q.right]) < longest or [len(c) for c in q.choices].count(longest) > 1
        ), q.text
        hedged = [bool(HEDGES.search(c)) for c in q.choices]
        assert not hedged[q.right] or sum(hedged) > 1, f"the only hedged choice is right: {q.text}"
    assert len({q.right for q in questions}) == len(questions)


def test_the_right_answers_are_spread_over_the_positions():
    rights = [q.right for questions in QUIZZES.values() for q in questions]
    counts = [rights.count(i) for i in range(3)]
    assert max(counts) - min(counts) <= 2, counts


def test_grade_marks_each_pick_and_refuses_a_wrong_count():
    rights = [q.right for q in QUIZZES["01"]]
    assert grade("01", rights) == [True] * len(rights)
    picks = [None, rights[1]] + [(r + 1) % 2 for r in rights[2:]]
    assert grade("01", picks) == [False, True] + [False] * (len(rights) - 2)
    with pytest.raises(ValueError, match=f"{len(rights)} questions"):
        grade("01", [0] * (len(rights) + 1))
    with pytest.raises(KeyError):
        grade("99", [])


def test_the_widget_checks_the_picks_and_says_why():
    box = make_quiz_widget("03")
    questions = QUIZZES["03"]
    assert box.results == [] and all(r.index is None for r in box.radios)
    box.radios[0].index = questions[0].right
    box.check_button.click()
    assert box.results[0] is True and box.feedback[0].value.startswith("✓")
    assert "not answered" in box.feedback[1].value
    box.radios[1].index = (questions[1].right + 1) % len(questions[1].choices)
    box.check_button.click()
    assert box.results[:2] == [True, False]
    assert box.feedback[0].value.startswith("✓") and box.feedback[1].value.startswith("✗")


def test_quiz_in_solutions_mode_answers_and_asserts(monkeypatch, capsys):
    monkeypatch.setenv("REACT_LAB_SOLUTIONS", "1")
    box = quiz("03")
    n = len(QUIZZES["03"])
    assert box.results == [True] * n
    assert f"{n} of {n} right" in capsys.readouterr().out


def notebook(path, minutes, **more):
    path.write_text(
        json.dumps(
            {
                "cells": [],
                "metadata": {"react_lab": {"minutes": minutes, **more}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        ),
        encoding="utf-8",
    )
    return path


def test_minutes_are_read_from_the_notebook_beside_the_kernel(tmp_path, monkeypatch, capsys):
    notebook(tmp_path / "01_x.ipynb", 20)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(nbminutes.SESSION_ENV, raising=False)
    assert nbminutes.show_minutes("01_x.ipynb") == 20
    out = capsys.readouterr().out
    assert out.startswith("About 20 minutes of reading, code, exercises and quiz (estimated)")
    assert "discussion not included" in out  # no discussion budgeted: the line says so


def test_the_discussion_budgeted_is_printed_beside_the_estimate(tmp_path, monkeypatch, capsys):
    notebook(tmp_path / "01_x.ipynb", 18, discussion=3)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(nbminutes.SESSION_ENV, raising=False)
    assert nbminutes.show_minutes("01_x.ipynb") == 18
    assert capsys.readouterr().out.endswith("(estimated), plus 3 of discussion.\n")


def test_a_renamed_copy_finds_itself_through_the_session_variable(tmp_path, monkeypatch):
    copy = notebook(tmp_path / "01_x-Copy1.ipynb", 25)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(nbminutes.SESSION_ENV, str(copy))
    assert nbminutes.notebook_file("01_x.ipynb") == copy
    assert nbminutes.show_minutes("01_x.ipynb") == 25


def test_no_notebook_found_is_one_line_not_an_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(nbminutes.SESSION_ENV, str(tmp_path / "elsewhere.ipynb"))
    notebook(tmp_path / "no_minutes.ipynb", "twenty")  # not an int: no minutes
    assert nbminutes.show_minutes("no_minutes.ipynb") is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "react_lab.minutes" in out


def test_a_quiz_shows_code_spans_as_code_and_escapes_the_rest():
    from react_lab.workshop.quiz import inline, make_quiz_widget

    assert inline("Is `a<b>` code? <i>no</i>") == (
        "Is <code>a&lt;b&gt;</code> code? &lt;i&gt;no&lt;/i&gt;"
    )
    box = make_quiz_widget("01")
    first = box.children[0].value
    assert "<code>" in first and "`" not in first
