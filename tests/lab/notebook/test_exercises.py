"""Exercise checkers pass the reference solutions and catch planted wrong answers.

The bench's exercises and notebook 02's loop here; every checker's promises (a stub is "not
written yet", solutions mode checks the reference); the core path's other pieces are in
test_core_exercises.py.
"""

import re

import pytest

from react_lab import agent as solutions
from react_lab.lab.notebook import solutions as bench_solutions
from react_lab.protocol import ACTION_RE, ANSWER_RE, STOP, build_prompt
from react_lab.tools import call_tool
from react_lab.workshop.agent_file import check
from react_lab.workshop.core_exercises import CORE, LOOP_RULES
from react_lab.workshop.exercises import EXERCISES, reference, run_cases

WRONG = {
    # unanchored, no comma split
    "parse_action": lambda text: (lambda m: m and (m.group(1), [m.group(2)]))(
        re.search(r"Action:\s*(\w+)\[(.*)\]", text)
    ),
    "dispatch": lambda tools, name, args: str(tools[name].fn(*args)),  # raises on bad input
    "cut_forgery": lambda text: text.split("Observation:")[0],  # misses the partial stop word
    "missing_fields": lambda schema, args: [k for k in schema["properties"] if k not in args][:1],
    "truncate_observation": lambda text, n: text[:n] + "...",  # no count, cuts at the limit
    "normalise_amount": lambda text: float(re.sub(r"[^\d.]", "", text) or 0),  # "0" for no number
    # ignores the arguments
    "is_repeat": lambda calls, name, args: any(n == name for n, _ in calls),
}


@pytest.fixture(autouse=True)
def _agent_file(tmp_path, monkeypatch):
    """A passing core piece is saved: into a file of the test's own, never the working directory."""
    monkeypatch.setenv("REACT_LAB_AGENT_FILE", str(tmp_path / "my_agent.py"))


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_reference_solution_passes(name, monkeypatch, capsys):
    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    passed, total, failure = run_cases(name, reference(name))
    assert failure is None and passed == total > 0
    monkeypatch.setenv("REACT_LAB_SOLUTIONS", "1")
    assert check(name, None) is True
    assert capsys.readouterr().out.startswith(f"✓ {name}: {total}/{total} cases pass (reference")


def test_the_reference_passed_as_ones_own_is_not_taken(monkeypatch, capsys, tmp_path):
    """The checker given the reference (imported, or standing in from load_agent) saves nothing."""
    from react_lab.workshop.agent_file import load_agent

    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    assert check("observe", solutions.observe) is False
    assert capsys.readouterr().out.startswith(
        "✎ observe: not written yet — the observe here is the reference standing in for yours:"
    )
    stand_in = load_agent(["observe"]).observe
    capsys.readouterr()
    assert check("observe", stand_in) is False
    assert "is the reference standing in for yours" in capsys.readouterr().out
    assert not (tmp_path / "my_agent.py").exists()
    # an edit the lesson writes: the learner types nothing, so the message says what to run
    guarded = load_agent(["run_loop_guards"]).run_loop
    capsys.readouterr()
    assert check("run_loop_guards", guarded) is False
    assert capsys.readouterr().out.startswith(
        "✎ run_loop_guards: not written yet — run the cell above (%agent run_loop + guards) "
        "twice: once to write the lesson's lines into your run_loop"
    )


@pytest.mark.parametrize("name", sorted(WRONG))
def test_planted_wrong_answer_fails(name, monkeypatch, capsys):
    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    assert check(name, WRONG[name]) is False  # never raises for a learner
    assert capsys.readouterr().out.startswith("✗")


def test_stub_is_reported_not_raised(monkeypatch, capsys):
    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)

    def stub(text):
        raise NotImplementedError

    assert check("parse_action", stub) is False
    out = capsys.readouterr().out
    # The learner's message: what to write, where, and that nothing passed (no ✓).
    assert out.startswith(
        "✎ parse_action: not written yet — write parse_action(text) -> (tool, args)"
    )
    assert "✓" not in out and "reference solution" not in out and "run this cell again" in out


def test_a_stub_in_solutions_mode_is_a_failure(monkeypatch):
    monkeypatch.setenv("REACT_LAB_SOLUTIONS", "1")

    def stub(*args):
        raise NotImplementedError

    monkeypatch.setattr(bench_solutions, "dispatch", stub)
    with pytest.raises(AssertionError, match="reference solution for dispatch fails: not written"):
        check("dispatch", None)


def test_solutions_mode_checks_the_reference_and_raises_on_a_wrong_one(monkeypatch):
    monkeypatch.setenv("REACT_LAB_SOLUTIONS", "1")
    wrong = WRONG["truncate_observation"]
    assert check("truncate_observation", wrong) is True  # the stub is replaced
    monkeypatch.setattr(bench_solutions, "truncate_observation", wrong)
    with pytest.raises(AssertionError, match="reference solution"):
        check("truncate_observation", None)


def test_every_exercise_has_a_solution_and_a_wrong_answer():
    """The bench's wrong answers are here; the core path's are in test_core_exercises.py."""
    assert set(EXERCISES) == set(WRONG) | set(CORE)
    assert all(callable(reference(name)) for name in EXERCISES)


def test_choose_uses_a_passing_function_else_the_reference(monkeypatch, capsys):
    from react_lab.workshop.exercises import choose

    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)

    def mine(text, n):
        return text if len(text) <= n else f"{text[:n]} ...[truncated {len(text) - n} characters]"

    assert choose("truncate_observation", mine) is mine
    assert "using your truncate_observation" in capsys.readouterr().out

    def stub(*args):
        raise NotImplementedError

    assert choose("truncate_observation", stub) is bench_solutions.truncate_observation
    assert "is not written yet" in capsys.readouterr().out
    wrong = WRONG["truncate_observation"]
    assert choose("truncate_observation", wrong) is bench_solutions.truncate_observation
    assert "fails a check" in capsys.readouterr().out
    monkeypatch.setenv("REACT_LAB_SOLUTIONS", "1")
    assert choose("truncate_observation", mine) is bench_solutions.truncate_observation


def observe(text, tools):
    """Notebook 01's piece, as a learner's notebook defines it before writing the loop."""
    match = ACTION_RE.search(text)
    if match is None:
        return "\nObservation: no action line\nThought:"
    args = [a.strip() for a in match.group(2).split(",")]
    return "\nObservation: " + call_tool(tools, match.group(1), args).text + "\nThought:"


def _loop(break_rule=None):
    """A loop written from notebook 02's five rules, with at most one of them broken.

    Its names come from this module's globals, as a notebook's come from its cells:
    ``observe`` is the one above.
    """

    def run(question, model, tools, exemplars=None, max_steps=6):
        shown = None if break_rule == "exemplars" else exemplars
        transcript = build_prompt(question, tools.values(), shown)
        for _ in range(6 if break_rule == "max_steps" else max_steps):
            if break_rule == "no max_tokens":
                completion = model.complete(transcript, stop=STOP)
            else:
                limit = 256 if break_rule == "max_tokens" else 128
                completion = model.complete(transcript, stop=STOP, max_tokens=limit)
            text = completion.text.strip() if break_rule == "strip text" else completion.text
            transcript += text
            match = ACTION_RE.search(text)
            if break_rule == "unanchored":
                found = "Answer:" in text  # the label anywhere, even inside a thought
            else:
                found = ANSWER_RE.search(text) is not None
            if found and not (break_rule == "action first" and match):
                rest = text.split("Answer:", 1)[1]
                answer = rest.strip() if break_rule == "line" else rest.split("\n")[0].strip()
                return answer, transcript
            if break_rule == "no action" and match is None:
                return None, transcript
            if break_rule == "inline":
                observation = (
                    call_tool(tools, match.group(1), match.group(2).split(",")).text
                    if match
                    else "none"
                )
                transcript += "\nObservation: " + observation + "\nThought:"
            elif break_rule == "label":
                transcript += observe(text, tools).removesuffix("\nThought:")
            elif break_rule == "observe the prompt":
                transcript += observe(transcript, tools)
            else:
                transcript += observe(text, tools)
        return None, transcript

    return run


def test_a_loop_written_from_the_rules_passes_every_run(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    monkeypatch.setenv("REACT_LAB_AGENT_FILE", str(tmp_path / "my_agent.py"))
    assert run_cases("run_loop", _loop()) == (6, 6, None)
    assert check("run_loop", _loop()) is True
    assert capsys.readouterr().out.startswith("✓ run_loop: 6/6 cases pass")


@pytest.mark.parametrize(
    "break_rule, rule",
    [
        ("exemplars", 1),
        ("strip text", 2),
        ("max_tokens", 2),
        ("no max_tokens", 2),
        ("action first", 3),
        ("line", 3),
        ("unanchored", 3),
        ("inline", 4),
        ("label", 4),
        ("observe the prompt", 4),
        ("no action", 4),
        ("max_steps", 5),
    ],
)
def test_a_broken_rule_fails_and_is_named(break_rule, rule):
    """A loop that breaks one rule of the notebook's five fails, and the message names that rule."""
    passed, total, failure = run_cases("run_loop", _loop(break_rule))
    assert failure is not None and passed < total == 6  # one case a rule, two for rule 3
    assert f"breaks rule {rule} ({LOOP_RULES[rule]}):" in failure, failure


def test_every_loop_failure_names_a_rule():
    """Every way the loop checker can fail names a rule, a raised exception included."""
    from react_lab.workshop.core_exercises import _loop_cases

    def raises(question, model, tools, exemplars=None, max_steps=6):
        model.complete("x", stop=None, max_tokens=128)
        raise KeyError("lookup_invoice")

    assert [c.rule for c in _loop_cases(LOOP_RULES)] == [1, 2, 3, 3, 4, 5]  # rule 3 twice
    failure = run_cases("run_loop", raises)[2]
    assert "breaks rule 1 (start): raised KeyError" in failure, failure


def test_a_loop_that_ignores_its_step_limit_is_stopped_and_told(monkeypatch):
    def forever(question, model, tools, exemplars=None, max_steps=6):
        transcript = build_prompt(question, tools.values(), exemplars)
        while True:
            transcript += model.complete(transcript, stop=STOP, max_tokens=128).text
            transcript += observe(transcript, tools)

    failure = run_cases("run_loop", forever)[2]
    assert "breaks rule 5 (step limit): raised TooManyCalls" in failure, failure


def test_the_spies_are_undone_after_every_case():
    """The checker watches call_tool and observe where a loop finds them, and puts them back."""
    import react_lab.tools

    before = globals()["observe"]
    run_cases("run_loop", _loop())
    run_cases("run_loop", _loop("inline"))
    run_cases("observe", observe)
    assert globals()["observe"] is before and globals()["call_tool"] is call_tool
    assert solutions.call_tool is call_tool and react_lab.tools.call_tool is call_tool
    assert solutions.observe.__name__ == "observe" and not hasattr(solutions.observe, "_spy")
