"""Exercise checkers pass the reference solutions and catch planted wrong answers."""
import re

import pytest

from react_lab.notebook import solutions
from react_lab.notebook.exercises import EXERCISES, check, run_cases

WRONG = {
    "parse_action": lambda text: (lambda m: m and (m.group(1), [m.group(2)]))(
        re.search(r"Action:\s*(\w+)\[(.*)\]", text)),           # unanchored, no comma split
    "dispatch": lambda tools, name, args: str(tools[name].fn(*args)),  # raises on bad input
    "cut_forgery": lambda text: text.split("Observation:")[0],      # misses the partial stop word
    "missing_fields": lambda schema, args: [k for k in schema["properties"] if k not in args][:1],
    "truncate_observation": lambda text, n: text[:n] + "...",       # no count, cuts at the limit
    "prompt_tokens_at_step": lambda P, O, A, k: P + k * (A + O),    # off by one step
    "is_repeat": lambda history, tool, args: any(a == args for _, a in history),  # ignores the tool
    "normalise_amount": lambda text: float(re.sub(r"[^\d.]", "", text) or 0),  # "0" for no number
}


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_reference_solution_passes(name, monkeypatch, capsys):
    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    passed, total, failure = run_cases(name, getattr(solutions, name))
    assert failure is None and passed == total > 0
    assert check(name, getattr(solutions, name)) is True
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_planted_wrong_answer_fails(name, monkeypatch, capsys):
    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    assert check(name, WRONG[name]) is False          # never raises for a learner
    assert capsys.readouterr().out.startswith("✗")


def test_stub_is_reported_not_raised(monkeypatch, capsys):
    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)

    def stub(text):
        raise NotImplementedError

    assert check("parse_action", stub) is False
    out = capsys.readouterr().out
    # The learner's message: what to write, where, and that nothing passed (no ✓).
    assert out.startswith("✎ parse_action: not written yet — write parse_action(text) -> (tool, args)")
    assert "✓" not in out and "reference solution" not in out and "run this cell again" in out


def test_a_stub_in_solutions_mode_is_a_failure(monkeypatch):
    monkeypatch.setenv("REACT_LAB_SOLUTIONS", "1")

    def stub(*args):
        raise NotImplementedError

    monkeypatch.setattr(solutions, "dispatch", stub)
    with pytest.raises(AssertionError, match="reference solution for dispatch fails: not written"):
        check("dispatch", None)


def test_solutions_mode_checks_the_reference_and_raises_on_a_wrong_one(monkeypatch):
    monkeypatch.setenv("REACT_LAB_SOLUTIONS", "1")
    assert check("prompt_tokens_at_step", WRONG["prompt_tokens_at_step"]) is True  # the stub is replaced
    monkeypatch.setattr(solutions, "prompt_tokens_at_step", WRONG["prompt_tokens_at_step"])
    with pytest.raises(AssertionError, match="reference solution"):
        check("prompt_tokens_at_step", None)


def test_every_exercise_has_a_solution_and_a_wrong_answer():
    assert set(EXERCISES) == set(WRONG)
    assert all(callable(getattr(solutions, name)) for name in EXERCISES)
