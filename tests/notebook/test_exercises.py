"""Exercise checkers pass the reference solutions and catch planted wrong answers."""
import re

import pytest

from react_lab.lab.notebook import solutions
from react_lab.lab.notebook.exercises import EXERCISES, LOOP_RULES, check, run_cases
from react_lab.protocol import ACTION_RE, STOP, build_prompt
from react_lab.tools import call_tool

def _loop_without_stop(question, model, tools, exemplars=None, max_steps=6):
    """The loop, but every request goes out without the stop sequence."""
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
    from react_lab.lab.notebook.exercises import choose

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


def _loop(break_rule=None):
    """A loop written from notebook 02's seven rules, with at most one of them broken.

    Its names come from this module's imports, as a notebook's come from its first cell.
    """
    def run(question, model, tools, exemplars=None, max_steps=6):
        transcript = build_prompt(question, tools.values(), None if break_rule == "exemplars" else exemplars)
        for _ in range(6 if break_rule == "max_steps" else max_steps):
            if break_rule == "no max_tokens":
                completion = model.complete(transcript, stop=STOP)
            else:
                completion = model.complete(transcript, stop=STOP, max_tokens=256 if break_rule == "max_tokens" else 128)
            text = completion.text.strip() if break_rule == "strip text" else completion.text
            transcript += text
            match = ACTION_RE.search(text) if break_rule != "anchor" else re.search(r"Action:\s*(\w+)\[(.*?)\]", text)
            if "Answer:" in text and not (break_rule == "action first" and match):
                rest = text.split("Answer:", 1)[1]
                return (rest.strip() if break_rule == "line" else rest.split("\n")[0].strip()), transcript
            if match is None:
                if break_rule == "no action":
                    return None, transcript
                observation = "" if break_rule == "empty" else "No action line: write Action: tool[args]"
            else:
                raw = match.group(2)
                args = raw.split(",") if break_rule == "split strip" else [a.strip() for a in raw.split(",")]
                observation = call_tool(tools, match.group(1), args).text
            transcript += "\nObservation: " + observation + ("" if break_rule == "label" else "\nThought:")
        return None, transcript
    return run


def test_a_loop_written_from_the_rules_passes_every_run(monkeypatch, capsys):
    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    assert run_cases("run_loop", _loop()) == (7, 7, None)
    assert check("run_loop", _loop()) is True
    assert capsys.readouterr().out.startswith("✓ run_loop: 7/7 cases pass")


@pytest.mark.parametrize("break_rule, rule", [
    ("exemplars", 1), ("strip text", 2), ("max_tokens", 2), ("no max_tokens", 2), ("action first", 3),
    ("line", 3), ("anchor", 4), ("split strip", 4), ("no action", 5), ("empty", 5), ("label", 6),
    ("max_steps", 7),
])
def test_a_broken_rule_fails_and_is_named(break_rule, rule):
    """A loop that breaks one rule of the notebook's seven fails, and the message names that rule."""
    passed, total, failure = run_cases("run_loop", _loop(break_rule))
    assert failure is not None and passed < total == len(LOOP_RULES) == 7
    assert f"breaks rule {rule} ({LOOP_RULES[rule]}):" in failure, failure


def test_every_loop_failure_names_a_rule():
    """Every way the loop checker can fail names a rule, a raised exception included."""
    from react_lab.lab.notebook.exercises import _loop_cases

    def raises(question, model, tools, exemplars=None, max_steps=6):
        model.complete("x", stop=None, max_tokens=128)
        raise KeyError("lookup_invoice")

    assert [c.rule for c in _loop_cases()] == [f"rule {n} ({name})" for n, name in LOOP_RULES.items()]
    failure = run_cases("run_loop", raises)[2]
    assert "breaks rule 1 (start): raised KeyError" in failure, failure


def test_the_call_tool_watch_sees_an_import_inside_the_loop_and_is_undone():
    """The checker watches call_tool where a loop finds it, and puts the real one back."""
    import react_lab.tools

    def imports_inside(question, model, tools, exemplars=None, max_steps=6):
        from react_lab.tools import call_tool as run_tool   # looked up at call time: watched
        transcript = build_prompt(question, tools.values(), exemplars)
        for _ in range(max_steps):
            text = model.complete(transcript, stop=STOP, max_tokens=128).text
            transcript += text
            if "Answer:" in text:
                return text.split("Answer:", 1)[1].split("\n")[0].strip(), transcript
            match = ACTION_RE.search(text)
            observation = run_tool(tools, match.group(1), match.group(2).split(",")).text if match else "none"
            transcript += "\nObservation: " + observation + "\nThought:"
        return None, transcript

    assert "breaks rule 4 (parse the action)" in run_cases("run_loop", imports_inside)[2]
    run_cases("run_loop", solutions.run_loop)
    run_cases("run_loop", _loop("split strip"))
    assert solutions.call_tool is call_tool and react_lab.tools.call_tool is call_tool
    assert globals()["call_tool"] is call_tool
