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
from typing import Any, Callable

from .. import agent
from ..lab.notebook import solutions
from ..tools import default_tools
from .cases import Case, TooManyCalls, named_rule
from .core_exercises import CORE, _repeat_cases

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


#: Every exercise by name: what to write, in one line, and its cases. The core path's
#: pieces (:data:`react_lab.workshop.core_exercises.CORE`) come first; then the bench's.
EXERCISES: dict[str, tuple[str, Callable[[], list[Case]]]] = {
    **{name: (exercise.task, exercise.cases) for name, exercise in CORE.items()},
    "is_repeat": (
        "is_repeat(history, tool, args) -> bool: True if (tool, args) was already called",
        _repeat_cases,
    ),
    "parse_action": (
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
    "dispatch": (
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
    "cut_forgery": (
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
    "missing_fields": (
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
    "truncate_observation": (
        "truncate_observation(text, max_chars) -> str: "
        "text unchanged if it fits; otherwise its first max_chars characters "
        "+ ' ...[truncated N characters]' where N is how many were cut",
        lambda: [
            Case(("short", 10), "short"),
            Case(("abcdefghij", 4), "abcd ...[truncated 6 characters]"),
            Case(("x" * 5, 5), "xxxxx", "exactly the limit fits"),
        ],
    ),
    "normalise_amount": (
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

    The failure is :data:`NOT_WRITTEN` for a stub that still raises ``NotImplementedError``.
    Never raises for what ``fn`` does; raises ``KeyError`` for an unknown exercise name.
    """
    _, make_cases = EXERCISES[name]
    cases = make_cases()
    passed, failure = 0, None
    for case in cases:
        args = ((_tools(),) + case.args) if name == "dispatch" else case.args
        shown = case.shown or ", ".join(
            [repr(a) for a in case.args] + [f"{k}={v!r}" for k, v in case.kwargs.items()]
        )
        try:
            with case.around(fn) if case.around else nullcontext():
                got = fn(*args, **case.kwargs)
        except NotImplementedError:
            return 0, len(cases), NOT_WRITTEN
        except Exception as exc:  # a learner's bug: report it, keep the notebook running
            failure = failure or f"{name}({shown}) {_raised(name, case, exc)}"
            continue
        expected = case.expected
        try:
            if callable(expected):
                wrong = expected(got)
            elif isinstance(expected, tuple) and len(expected) == 2 and expected[0] == "contains":
                wrong = (
                    None
                    if isinstance(got, str) and expected[1] in got
                    else f"returned {got!r}; expected a string containing {expected[1]!r}"
                )
            else:
                wrong = None if got == expected else f"returned {got!r}; expected {expected!r}"
        except Exception as exc:  # what fn returned cannot even be compared (its __eq__ raises)
            wrong = (
                f"returned {type(got).__name__}, which cannot be checked "
                f"({type(exc).__name__}: {exc})"
            )
        if wrong is None:
            passed += 1
        elif failure is None:
            failure = f"{name}({shown}) {wrong}" + (f" ({case.note})" if case.note else "")
    return passed, len(cases), failure


def _raised(name: str, case: Case, exc: Exception) -> str:
    """What a case says when the learner's function raised: the rule it breaks, the exception."""
    rule, hint = case.rule, ""
    rules = CORE[name].rules if name in CORE else {}
    if isinstance(exc, TooManyCalls):  # a loop that ignores its step limit
        limit = [n for n, r in rules.items() if r == "step limit"]
        rule = f"rule {limit[0]} (step limit)" if limit else rule
    missing = getattr(exc, "name", None) if isinstance(exc, NameError) else None
    if missing in PIECE_RULES:  # a piece this one calls, not defined where it runs
        number = PIECE_RULES[missing]
        rule = f"rule {number} ({rules[number]})" if number in rules else rule
        hint = (
            f" ({missing} is another piece of your agent: run the cell that loads it, "
            f"{missing} = agent.{missing}, or define it above)"
        )
    broke = f"breaks {rule}: " if rule else ""
    return f"{broke}raised {type(exc).__name__}: {exc}{hint}"


#: The rule of a calling exercise that names the piece it calls (observe is rule 4 of the loop).
PIECE_RULES = {"observe": 4}


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
    elif is_reference(fn):
        print(
            f"✎ {name}: not written yet — the {getattr(fn, '__name__', name)} here is the "
            "reference standing in for yours. Write yours in the cell above (an edit starts "
            "from %agent), then run this cell again."
        )
        return False
    passed, total, failure = run_cases(name, fn)
    if failure == NOT_WRITTEN and not solutions_mode():
        print(
            f"✎ {name}: not written yet — write {EXERCISES[name][0]}. Replace the "
            "`raise NotImplementedError` line in the cell above, then run this cell again."
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
