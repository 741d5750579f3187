"""Exercise checkers pass the reference solutions and catch planted wrong answers."""
import re

import pytest

from react_lab.notebook import solutions
from react_lab.notebook.exercises import EXERCISES, check, run_cases

def _loop_without_stop(question, model, tools, exemplars=None, max_steps=6):
    """The loop, but every request goes out without the stop sequence."""
    from react_lab.protocol import ACTION_RE, build_prompt
    from react_lab.tools import call_tool

    transcript = build_prompt(question, tools.values(), exemplars)
    for _ in range(max_steps):
        text = model.complete(transcript, max_tokens=128).text
        transcript += text
        if "Answer:" in text:
            return text.split("Answer:", 1)[1].split("\n")[0].strip(), transcript
        match = ACTION_RE.search(text)
        observation = call_tool(tools, match.group(1), [a.strip() for a in match.group(2).split(",")]).text \
            if match else "no action"
        transcript += f"\nObservation: {observation}\nThought:"
    return None, transcript


WRONG = {
    "run_loop": _loop_without_stop,
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


def test_choose_uses_a_passing_function_else_the_reference(monkeypatch, capsys):
    from react_lab.notebook.exercises import choose

    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    mine = lambda P, O, A, k: P + (k - 1) * (A + O)  # noqa: E731
    assert choose("prompt_tokens_at_step", mine) is mine
    assert "using your prompt_tokens_at_step" in capsys.readouterr().out

    def stub(*args):
        raise NotImplementedError

    assert choose("prompt_tokens_at_step", stub) is solutions.prompt_tokens_at_step
    assert "is not written yet" in capsys.readouterr().out
    assert choose("prompt_tokens_at_step", WRONG["prompt_tokens_at_step"]) is solutions.prompt_tokens_at_step
    assert "fails a check" in capsys.readouterr().out
    monkeypatch.setenv("REACT_LAB_SOLUTIONS", "1")
    assert choose("prompt_tokens_at_step", mine) is solutions.prompt_tokens_at_step


def test_each_loop_rule_is_checked_on_its_own():
    """A loop that breaks one rule fails that rule's check first, named with the rule."""
    from react_lab.protocol import ACTION_RE

    def loop(break_rule):
        def run(question, model, tools, exemplars=None, max_steps=6):
            from react_lab.protocol import STOP, build_prompt
            from react_lab.tools import call_tool
            transcript = build_prompt(question, tools.values(), exemplars)
            for _ in range(max_steps):
                text = model.complete(transcript, stop=STOP, max_tokens=128).text
                transcript += text
                if "Answer:" in text:
                    rest = text.split("Answer:", 1)[1]
                    return (rest.strip() if break_rule == "line" else rest.split("\n")[0].strip()), transcript
                match = ACTION_RE.search(text) if break_rule != "anchor" else \
                    __import__("re").search(r"Action:\s*(\w+)\[(.*?)\]", text)
                if match is None:
                    if break_rule == "no-action":
                        return None, transcript
                    observation = "no action"
                else:
                    raw = match.group(2)
                    args = [raw] if break_rule == "split" else [a.strip() for a in raw.split(",")]
                    observation = call_tool(tools, match.group(1), args).text
                transcript += f"\nObservation: {observation}" + ("" if break_rule == "label" else "\nThought:")
            return None, transcript
        return run

    for rule, words in [("line", "rest of the Answer: line"), ("anchor", "starts with Action:"),
                        ("split", "split on commas"), ("no-action", "loop goes on"),
                        ("label", "next label")]:
        passed, total, failure = run_cases("run_loop", loop(rule))
        assert failure is not None and passed < total, rule
        assert words in failure or "next label" in failure, (rule, failure)
