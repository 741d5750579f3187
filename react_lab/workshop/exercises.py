"""Exercises: write the piece a notebook just taught, then check it against cases.

In a notebook, an exercise is a stub you fill in and a checker cell::

    def parse_action(text): ...            # your code
    check("parse_action", parse_action)    # prints ✓, or the first rule a case breaks

An exercise of the core path is a piece of the learner's agent
(:mod:`react_lab.workshop.core_exercises`): when it passes, the core notebooks'
checker, :func:`react_lab.workshop.agent_file.check`, saves it into the learner's file,
``my_agent.py``.

The reference solutions live in one place, :mod:`react_lab.agent`. With
``REACT_LAB_SOLUTIONS=1`` in the environment (CI sets it), :func:`check` checks the
reference solution instead of the stub and raises ``AssertionError`` on a failure, so
a wrong solution fails the build. Without it, :func:`check` never raises: a learner's
"Restart & Run All" goes on past an unfinished exercise.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import agent
from ..lab.notebook import solutions
from ..tools import default_tools
from .cases import VALUE_CHECKS, Case, Check, first_broken, named_rule, value_facts
from .core_exercises import BOOL_CHECKS, CORE, REPEAT_RULES, _repeat_cases

SOLUTIONS_ENV = "REACT_LAB_SOLUTIONS"
#: What :func:`run_cases` reports when the function still raises ``NotImplementedError``.
NOT_WRITTEN = "not written yet: replace the `raise NotImplementedError` line"


def _tools():
    return default_tools()


# Each exercise: what the function does, and the cases it must pass. Expected values
# that depend on the database are computed from the package, not typed in.
def _error_naming(name: str) -> Callable[[Any], str | None]:
    """A check: the result is a text starting with 'Error' that names ``name``."""

    def verify(got):
        if not isinstance(got, str):
            return f"returned {got!r}; expected a text (str)"
        if not got.startswith("Error") or name not in got:
            return f"returned {got!r}; expected a text that starts with 'Error' and names {name!r}"
        return None

    return verify


def _same_text(want: str) -> Callable[[Any], str | None]:
    """A check: the result is ``want``, give or take trailing newlines."""

    def verify(got):
        if isinstance(got, str) and got.rstrip("\n") == want:
            return None
        return f"returned {got!r}; expected {want!r} (a trailing newline may stay or go)"

    return verify


@dataclass(frozen=True)
class BenchExercise:
    """A bench notebook's exercise: what to write, its cases, and (most have none) its rules.

    The core path's :class:`react_lab.workshop.core_exercises.Exercise` has these too.
    """

    task: str
    cases: Callable[[], list[Case]]
    rules: dict[int, str] = field(default_factory=dict)
    checks: tuple[Check, ...] = VALUE_CHECKS


def _bench(task: str, cases: Callable[[], list[Case]]) -> BenchExercise:
    return BenchExercise(task, cases)


#: Every exercise by name: what to write, in one line, its cases and its rule table. The core
#: path's pieces (:data:`react_lab.workshop.core_exercises.CORE`) come first; then the bench's.
EXERCISES: dict[str, Any] = {
    **CORE,
    "is_repeat": BenchExercise(
        "is_repeat(history, tool, args) -> bool: True if (tool, args) was already called",
        _repeat_cases,
        REPEAT_RULES,
        BOOL_CHECKS,
    ),
    "parse_action": _bench(
        "parse_action(text) -> (tool, args) or None: "
        "the anchored action line, args split on commas",
        lambda: [
            Case(("Thought: x\nAction: get_charge[ch_1KZq8f]",), ("get_charge", ["ch_1KZq8f"])),
            Case(
                ("Action: list_invoices[cus_8812, 2026-07-01]",),
                ("list_invoices", ["cus_8812", "2026-07-01"]),
                "arguments are split on commas and stripped",
            ),
            Case(("I will do Action: search[x] later",), None, "only at the start of a line"),
            Case(("Thought: nothing to do",), None, "no action line"),
            Case(("Thought: a\nAction: search[refund policy]\n",), ("search", ["refund policy"])),
        ],
    ),
    "dispatch": _bench(
        "dispatch(tools, name, args) -> str: the tool's result as text (str or json.dumps); an "
        "unknown tool or a failing call as a text that starts with 'Error' and names the tool; "
        "never raise",
        lambda: [
            Case(("get_charge", ["ch_1KZq8f"]), ("contains", "succeeded"), "a real lookup"),
            Case(("serch", ["x"]), _error_naming("serch"), "an unknown tool is an observation"),
            Case(
                ("list_invoices", ["cus_8812"]),
                _error_naming("list_invoices"),
                "a call that fails is an observation",
            ),
        ],
    ),
    "cut_forgery": _bench(
        "cut_forgery(text) -> str: drop a model-written Observation line and all after it, "
        "and a cut-off stop word at the end (a trailing newline may stay or go)",
        lambda: [
            Case(("Action: a[b]\nObservation: fake\nAnswer: x",), _same_text("Action: a[b]")),
            Case(
                ("Action: a[b]\nObserv",),
                _same_text("Action: a[b]"),
                "a partial stop word at the end",
            ),
            Case(("Action: a[b]",), _same_text("Action: a[b]"), "nothing to cut"),
            Case(
                ("The observation: fine\nAction: a[b]",),
                _same_text("The observation: fine\nAction: a[b]"),
                "only a line that starts with the label",
            ),
        ],
    ),
    "missing_fields": _bench(
        "missing_fields(schema, args) -> list[str]: "
        "the schema's required properties absent from args, in order",
        lambda: [
            Case((_tools()["list_invoices"].parameters, {"customer_id": "cus_8812"}), ["since"]),
            Case((_tools()["list_invoices"].parameters, {}), ["customer_id", "since"]),
            Case(
                (
                    _tools()["list_invoices"].parameters,
                    {"customer_id": "cus_8812", "since": "2026-07-01"},
                ),
                [],
            ),
            Case(
                (_tools()["get_charge"].parameters, {"charge": "ch_1KZq8f"}),
                ["charge_id"],
                "a misspelt key does not count",
            ),
        ],
    ),
    "truncate_observation": _bench(
        "truncate_observation(text, max_chars) -> str: "
        "text unchanged if it fits; otherwise its first max_chars characters "
        "+ ' ...[truncated N characters]' where N is how many were cut",
        lambda: [
            Case(("short", 10), "short"),
            Case(("abcdefghij", 4), "abcd ...[truncated 6 characters]"),
            Case(("x" * 5, 5), "xxxxx", "exactly the limit fits"),
        ],
    ),
    "normalise_amount": _bench(
        "normalise_amount(text) -> float | None: "
        "the first number in the text, thousands separators dropped "
        "('$1,290.50' -> 1290.5, 'INV-2041 totals $129.00' -> 2041.0)",
        lambda: [
            Case(("$129.00",), 129.0),
            Case(("It was 1,290.50 dollars",), 1290.5),
            Case(("48200",), 48200.0),
            Case(("INV-2041 totals $129.00",), 2041.0),
            Case(("no number here",), None),
        ],
    ),
}


def solutions_mode() -> bool:
    """True when ``REACT_LAB_SOLUTIONS`` is set to a true value (CI runs the solutions)."""
    return os.environ.get(SOLUTIONS_ENV, "").strip().lower() in {"1", "true", "yes"}


def run_cases(name: str, fn: Callable) -> tuple[int, int, str | None]:
    """Run exercise ``name``'s cases on ``fn``; return (passed, total, first failure or None).

    The engine: each case's run is held to the exercise's rule table
    (:func:`react_lab.workshop.cases.first_broken`); a failure names the call and the first
    row it breaks. It is :data:`NOT_WRITTEN` for a stub that still raises
    ``NotImplementedError``. Never raises for what ``fn`` does; raises ``KeyError`` for an
    unknown exercise name.
    """
    exercise = EXERCISES[name]
    cases = exercise.cases()
    passed, failure = 0, None
    for case in cases:
        args = ((_tools(),) + case.args) if name == "dispatch" else case.args
        try:
            with case.around(fn) if case.around else nullcontext():
                got, error = fn(*args, **case.kwargs), None
        except NotImplementedError:
            return 0, len(cases), NOT_WRITTEN
        except Exception as exc:  # a learner's bug: the table says which rule it breaks
            got, error = None, exc
        facts = case.facts(got, error) if case.facts else value_facts(case, got, error)
        wrong = first_broken(exercise.checks, facts, exercise.rules)
        if wrong is None:
            passed += 1
        elif failure is None:
            shown = case.shown or ", ".join(
                [repr(a) for a in case.args] + [f"{k}={v!r}" for k, v in case.kwargs.items()]
            )
            failure = f"{name}({shown}) {wrong}"
    return passed, len(cases), failure


def reference(name: str) -> Callable:
    """Exercise ``name``'s reference solution: a piece of :mod:`react_lab.agent` (the core path's),
    or a bench exercise's from :mod:`react_lab.lab.notebook.solutions`."""
    return getattr(agent, name, None) or getattr(solutions, name)


def is_reference(fn) -> bool:
    """True for a reference solution, or one standing in for a learner's piece.

    A checker never takes one for the learner's work (nbgrader's issue 940: an autograder
    that imported the instructor's file passed every learner), nor saves it as theirs.
    """
    module = getattr(fn, "__module__", None)
    return module in (agent.__name__, solutions.__name__) or hasattr(fn, "reference")


def failed_rule(failure: str | None) -> tuple[int, str] | None:
    """The ``(number, name)`` of the rule a :func:`run_cases` failure names, or None."""
    return named_rule(failure)


def choose(name: str, fn: Callable) -> Callable:
    """Return ``fn`` when it passes exercise ``name``'s cases, else the reference solution.

    Says which. The cell after an exercise runs on what this returns, so a notebook runs top
    to bottom before the exercise is written, and on the learner's own function once it
    passes. In solutions mode (CI) it returns the reference solution.
    """
    reference_fn = reference(name)
    if solutions_mode():
        print(f"using the reference {name} (solutions mode)")
        return reference_fn
    passed, total, failure = run_cases(name, fn)
    if failure is None:
        print(f"using your {name}: it passes all {total} checks")
        return fn
    why = (
        "is not written yet" if failure == NOT_WRITTEN else f"fails a check ({passed}/{total} pass)"
    )
    print(f"using the reference {name}: yours {why}; fix it and run this cell again")
    return reference_fn


def check(name: str, fn: Callable, *, save: Callable | None = None) -> bool:
    """Check ``fn`` (or, in solutions mode, the reference solution) and print ✓ or what is wrong.

    Returns True when every case passes. A stub that still raises ``NotImplementedError``
    gets the learner's "not written yet — write ..." message, not a failure. ``save``
    (``save(fn, exercise) -> str``) keeps a passing piece of the core path and says where;
    the core notebooks' ``check`` (:func:`react_lab.workshop.agent_file.check`) passes
    the one that writes the learner's ``my_agent.py``. In solutions mode a failure raises
    ``AssertionError``, so CI notices a wrong reference solution, and nothing is saved.
    """
    if solutions_mode():
        fn = reference(name)
    elif is_reference(fn) and name in CORE and CORE[name].given:
        print(
            f"✎ {name}: not written yet — run the cell above ({CORE[name].stub.strip()}) twice: "
            "once to write the lesson's lines into your run_loop, once to define it; then this one."
        )
        return False
    elif is_reference(fn):
        print(
            f"✎ {name}: not written yet — the {getattr(fn, '__name__', name)} here is the "
            "reference standing in for yours: edit yours in the cell above, then run this one."
        )
        return False
    passed, total, failure = run_cases(name, fn)
    if failure == NOT_WRITTEN and not solutions_mode():
        print(
            f"✎ {name}: not written yet — write {EXERCISES[name].task}, in place of the "
            "`raise NotImplementedError` line above; then run this cell again."
        )
        return False
    source = " (reference solution)" if solutions_mode() else ""
    if failure is None:
        saved = ""
        if save is not None and name in CORE and not solutions_mode():
            saved = f" — {save(fn, name)}"
        print(f"✓ {name}: {passed}/{total} cases pass{source}{saved}")
        return True
    print(f"✗ {name}: {passed}/{total} cases pass{source}. First problem: {failure}")
    if solutions_mode():
        raise AssertionError(f"reference solution for {name} fails: {failure}")
    return False
