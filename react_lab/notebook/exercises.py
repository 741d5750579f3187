"""Exercises: write the piece a notebook just taught, then check it against cases.

In a notebook, an exercise is a stub you fill in and a checker cell::

    def parse_action(text): ...            # your code
    check("parse_action", parse_action)    # prints ✓, or the first case that fails

The reference solutions live in one place, :mod:`react_lab.notebook.solutions`. With
``REACT_LAB_SOLUTIONS=1`` in the environment (CI sets it), :func:`check` checks the
reference solution instead of the stub and raises ``AssertionError`` on a failure, so
a wrong solution fails the build. Without it, :func:`check` never raises: a learner's
"Restart & Run All" goes on past an unfinished exercise.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

from ..tools import default_tools
from . import solutions

SOLUTIONS_ENV = "REACT_LAB_SOLUTIONS"
#: What :func:`run_cases` reports when the function still raises ``NotImplementedError``.
NOT_WRITTEN = "not written yet: replace the `raise NotImplementedError` line"


@dataclass(frozen=True)
class Case:
    """One check: call the function with ``args``; compare with ``expected`` (or run ``test``)."""

    args: tuple
    expected: Any
    note: str = ""


def _tools():
    return default_tools()


# Each exercise: what the function does, and the cases it must pass. Expected values
# that depend on the database are computed from the package, not typed in.
EXERCISES: dict[str, tuple[str, Callable[[], list[Case]]]] = {
    "parse_action": (
        "parse_action(text) -> (tool, args) or None: the anchored action line, args split on commas",
        lambda: [
            Case(("Thought: x\nAction: get_charge[ch_1KZq8f]",), ("get_charge", ["ch_1KZq8f"])),
            Case(("Action: list_invoices[cus_8812, 2026-07-01]",), ("list_invoices", ["cus_8812", "2026-07-01"]),
                 "arguments are split on commas and stripped"),
            Case(("I will do Action: search[x] later",), None, "only at the start of a line"),
            Case(("Thought: nothing to do",), None, "no action line"),
            Case(("Thought: a\nAction: search[refund policy]\n",), ("search", ["refund policy"])),
        ],
    ),
    "dispatch": (
        "dispatch(tools, name, args) -> str: run the tool, or return an error text; never raise",
        lambda: [
            Case(("get_charge", ["ch_1KZq8f"]), ("contains", '"succeeded"'), "a real lookup"),
            Case(("serch", ["x"]), ("contains", "unknown tool 'serch'"), "an unknown tool is an observation"),
            Case(("list_invoices", ["cus_8812"]), ("contains", "rror"), "a bad call is an observation"),
        ],
    ),
    "cut_forgery": (
        "cut_forgery(text) -> str: drop a model-written Observation line and all after it, "
        "and a cut-off stop word at the end",
        lambda: [
            Case(("Action: a[b]\nObservation: fake\nAnswer: x",), "Action: a[b]\n"),
            Case(("Action: a[b]\nObserv",), "Action: a[b]\n", "a partial stop word at the end"),
            Case(("Action: a[b]",), "Action: a[b]", "nothing to cut"),
            Case(("The observation: fine\nAction: a[b]",), "The observation: fine\nAction: a[b]",
                 "only a line that starts with the label"),
        ],
    ),
    "missing_fields": (
        "missing_fields(schema, args) -> list[str]: the schema's required properties absent from args, in order",
        lambda: [
            Case((_tools()["list_invoices"].parameters, {"customer_id": "cus_8812"}), ["since"]),
            Case((_tools()["list_invoices"].parameters, {}), ["customer_id", "since"]),
            Case((_tools()["list_invoices"].parameters, {"customer_id": "cus_8812", "since": "2026-07-01"}), []),
            Case((_tools()["get_charge"].parameters, {"charge": "ch_1KZq8f"}), ["charge_id"],
                 "a misspelt key does not count"),
        ],
    ),
    "truncate_observation": (
        "truncate_observation(text, max_chars) -> str: text unchanged if it fits; otherwise its first "
        "max_chars characters + ' ...[truncated N characters]' where N is how many were cut",
        lambda: [
            Case(("short", 10), "short"),
            Case(("abcdefghij", 4), "abcd ...[truncated 6 characters]"),
            Case(("x" * 5, 5), "xxxxx", "exactly the limit fits"),
        ],
    ),
    "prompt_tokens_at_step": (
        "prompt_tokens_at_step(P, O, A, k) -> int: prompt tokens sent at step k (1-based)",
        lambda: [Case((1000, 600, 100, 1), 1000), Case((1000, 600, 100, 10), 7300),
                 Case((340, 0, 50, 3), 440), Case((0, 10, 0, 4), 30)],
    ),
    "is_repeat": (
        "is_repeat(history, tool, args) -> bool: True if (tool, args) was already called",
        lambda: [
            Case(([], "search", "refunds"), False),
            Case(([("search", "refunds")], "search", "refunds"), True),
            Case(([("search", "refunds")], "search", "refund policy"), False),
            Case(([("search", "refunds")], "get_charge", "refunds"), False, "the tool name counts too"),
        ],
    ),
    "normalise_amount": (
        "normalise_amount(text) -> float | None: the first money amount in dollars ('$1,290.50' -> 1290.5)",
        lambda: [Case(("$129.00",), 129.0), Case(("It was 1,290.50 dollars",), 1290.5),
                 Case(("48200",), 48200.0), Case(("no number here",), None)],
    ),
}


def solutions_mode() -> bool:
    """True when ``REACT_LAB_SOLUTIONS`` is set to a true value (CI runs the solutions)."""
    return os.environ.get(SOLUTIONS_ENV, "").strip().lower() in {"1", "true", "yes"}


def run_cases(name: str, fn: Callable) -> tuple[int, int, str | None]:
    """Run exercise ``name``'s cases on ``fn``; return (passed, total, first failure or None).

    Raises ``KeyError`` for an unknown exercise name.
    """
    _, make_cases = EXERCISES[name]
    cases = make_cases()
    passed, failure = 0, None
    for case in cases:
        args = ((_tools(),) + case.args) if name == "dispatch" else case.args
        shown = ", ".join(repr(a) for a in case.args)
        try:
            got = fn(*args)
        except NotImplementedError:
            return 0, len(cases), NOT_WRITTEN
        except Exception as exc:  # a learner's bug: report it, keep the notebook running
            failure = failure or f"{name}({shown}) raised {type(exc).__name__}: {exc}"
            continue
        expected = case.expected
        if isinstance(expected, tuple) and len(expected) == 2 and expected[0] == "contains":
            ok = isinstance(got, str) and expected[1] in got
            want = f"a string containing {expected[1]!r}"
        else:
            ok = got == expected
            want = repr(expected)
        if ok:
            passed += 1
        elif failure is None:
            failure = f"{name}({shown}) returned {got!r}; expected {want}" + \
                      (f" ({case.note})" if case.note else "")
    return passed, len(cases), failure


def check(name: str, fn: Callable) -> bool:
    """Check ``fn`` (or, in solutions mode, the reference solution) and print ✓ or what is wrong.

    Returns True when every case passes. A stub that still raises ``NotImplementedError``
    gets the learner's "not written yet — write ..." message, not a failure. In
    solutions mode a failure raises ``AssertionError``, so CI notices a wrong reference
    solution.
    """
    if solutions_mode():
        fn = getattr(solutions, name)
    passed, total, failure = run_cases(name, fn)
    if failure == NOT_WRITTEN and not solutions_mode():
        print(f"✎ {name}: not written yet — write {EXERCISES[name][0]}. Replace the "
              "`raise NotImplementedError` line in the cell above, then run this cell again.")
        return False
    source = " (reference solution)" if solutions_mode() else ""
    if failure is None:
        print(f"✓ {name}: {passed}/{total} cases pass{source}")
        return True
    print(f"✗ {name}: {passed}/{total} cases pass{source}. First problem: {failure}")
    if solutions_mode():
        raise AssertionError(f"reference solution for {name} fails: {failure}")
    return False
