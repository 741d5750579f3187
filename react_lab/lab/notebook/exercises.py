"""Exercises: write the piece a notebook just taught, then check it against cases.

In a notebook, an exercise is a stub you fill in and a checker cell::

    def parse_action(text): ...            # your code
    check("parse_action", parse_action)    # prints ✓, or the first case that fails

The reference solutions live in one place, :mod:`react_lab.lab.notebook.solutions`. With
``REACT_LAB_SOLUTIONS=1`` in the environment (CI sets it), :func:`check` checks the
reference solution instead of the stub and raises ``AssertionError`` on a failure, so
a wrong solution fails the build. Without it, :func:`check` never raises: a learner's
"Restart & Run All" goes on past an unfinished exercise.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager

from ...protocol import ACTION_RE, EXEMPLARS, MAX_TOKENS, OBSERVATION, STOP, THOUGHT, build_prompt
from ...tools import call_tool, default_tools
from . import solutions

SOLUTIONS_ENV = "REACT_LAB_SOLUTIONS"
#: What :func:`run_cases` reports when the function still raises ``NotImplementedError``.
NOT_WRITTEN = "not written yet: replace the `raise NotImplementedError` line"


@dataclass(frozen=True)
class Case:
    """One check: call the function with ``args`` (and ``kwargs``); compare with ``expected``.

    ``expected`` is the value to return, ``("contains", text)`` for a string holding
    ``text``, or a function ``verify(got) -> str | None`` that returns what is wrong
    (None when nothing is). ``shown`` replaces the arguments in a failure message when
    they are too long to print (a model, a tool set). ``rule`` names the rule a run
    checks, in the message when the function raises; ``around(fn)`` is a context manager
    the call runs inside (to watch what ``fn`` calls).
    """

    args: tuple
    expected: Any
    note: str = ""
    kwargs: dict = field(default_factory=dict)
    shown: str = ""
    rule: str = ""
    around: Callable[[Callable], ContextManager] | None = None


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


#: The loop exercise's rules, numbered and named as notebook 02 states them; a failure names one.
LOOP_RULES = {1: "start", 2: "send and append", 3: "stop on an answer", 4: "parse the action",
              5: "dispatch", 6: "write the observation", 7: "step limit"}
#: The ``max_tokens`` rule 2 states for every call.
LOOP_MAX_TOKENS = 128


def _broke(rule: int, detail: str) -> str:
    return f"breaks rule {rule} ({LOOP_RULES[rule]}): {detail}"


class _Recording:
    """A scripted model (stop applied as a provider applies it) that records what each call sent and got.

    ``sent`` holds ``(stop, max_tokens)`` per call, ``max_tokens`` None when the loop left
    it out; ``texts`` the completion text each call returned.
    """

    def __init__(self, completions):
        from ..backends.scripted import ScriptedModel

        self.inner, self.sent, self.texts = ScriptedModel(completions), [], []

    @property
    def prompts(self) -> list[str]:
        return self.inner.prompts

    @property
    def calls(self) -> int:
        return self.inner.calls

    def complete(self, prompt, *, stop=None, max_tokens=None):
        self.sent.append((stop, max_tokens))
        completion = self.inner.complete(prompt, stop=stop,
                                         max_tokens=MAX_TOKENS if max_tokens is None else max_tokens)
        self.texts.append(completion.text)
        return completion


@contextmanager
def _watching_call_tool(fn: Callable, seen: list):
    """Record the ``(tool, args)`` that ``fn`` passes to ``call_tool`` while the run lasts.

    ``call_tool`` strips arguments itself, so an observation cannot show whether the loop
    stripped them (rule 4); the call can. The name is swapped in ``fn``'s module (a
    notebook's namespace) and in :mod:`react_lab.tools` (an import inside ``fn``), and put
    back afterwards. A loop that reaches ``call_tool`` another way is not watched; its
    observations are still checked.
    """
    def recording(tools, name, args):
        seen.append((name, args))
        return call_tool(tools, name, args)

    space = getattr(fn, "__globals__", None)
    spaces = [ns for ns in (space, vars(sys.modules[call_tool.__module__]))
              if isinstance(ns, dict) and ns.get("call_tool") is call_tool]
    for ns in spaces:
        ns["call_tool"] = recording
    try:
        yield
    finally:
        for ns in spaces:
            ns["call_tool"] = call_tool


def _split(raw: str) -> list[str]:
    return [piece.strip() for piece in raw.split(",")]


def _check_sent(model, first: str) -> str | None:
    """Rules 1 and 2 on what went out: the first prompt, and ``stop`` and ``max_tokens`` on every call."""
    if not model.prompts:
        return _broke(2, "never called model.complete")
    if model.prompts[0] != first:
        return _broke(1, "the first prompt the model received is not build_prompt(question, tools.values(), exemplars)")
    for stop, max_tokens in model.sent:
        if stop != STOP:
            return _broke(2, f"sent stop={stop!r}; send stop=STOP on every call")
        if max_tokens != LOOP_MAX_TOKENS:
            return _broke(2, f"sent max_tokens={max_tokens!r}; send max_tokens={LOOP_MAX_TOKENS} on every call")
    return None


def _check_parsed(texts: list[str], seen: list) -> str | None:
    """Rule 4 on the calls the loop made: ACTION_RE's action line, split on commas, each piece stripped."""
    wanted = []
    for text in texts:
        if "Answer:" in text:
            break
        match = ACTION_RE.search(text)
        if match:
            wanted.append((match.group(1), _split(match.group(2))))
    for (name, args), (want_name, want_args) in zip(seen, wanted):
        if name != want_name or not isinstance(args, (list, tuple)) or list(args) != want_args:
            return _broke(4, f"called call_tool with {name!r}, {args!r}; the line that starts with Action: "
                             f"gives {want_name!r}, {want_args!r}")
    return None


def _check_steps(model, tools) -> str | None:
    """Rules 2, 3, 5 and 6 on each step: the next prompt is this one, the text as it is, then the observation."""
    head, tail = f"\n{OBSERVATION}: ", f"\n{THOUGHT}:"
    for before, text, after in zip(model.prompts, model.texts, model.prompts[1:]):
        if not after.startswith(before):
            return _broke(2, "sent a prompt that is not the whole transcript so far (each prompt must extend the last)")
        if not after.startswith(before + text):
            return _broke(2, f"did not append the completion's text as it is ({text!r}: keep every space and newline)")
        if "Answer:" in text:
            return _broke(3, f"went on after {text!r}, which contains 'Answer:'; look for it before an action")
        written = after[len(before + text):]
        if not written.startswith(head):
            return _broke(6, f"appended {written[:40]!r}... after the completion; start with '\\nObservation: '")
        if not written.endswith(tail) or len(written) < len(head + tail):
            return _broke(6, f"ended the observation with ...{written[-40:]!r}; end it with '\\nThought:'")
        observation = written[len(head):len(written) - len(tail)]
        match = ACTION_RE.search(text)
        if match is None and not observation.strip():
            return _broke(5, f"wrote an empty observation after {text!r}; with no action line, say so")
        want = match and call_tool(tools, match.group(1), _split(match.group(2))).text
        if match and observation != want:
            return _broke(5, f"after {match.group(0).strip()!r} wrote the observation {observation[:60]!r}; "
                             f"expected call_tool(tools, name, args).text, {want[:60]!r}")
    return None


def _loop_case(rule: int, question: str, script: list[str], *, answer: Any, calls: int, hint: str = "",
               exemplars=None, max_steps: int = 6) -> Case:
    """The run for one rule: the learner's loop on a scripted model, and every rule checked on it.

    ``answer``: what the loop must return; ``calls``: how many model calls it must make
    (``hint`` says why, when it made another number).
    """
    tools, model, seen = _tools(), _Recording(script), []

    def verify(got):
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], str)):
            return f"returned {got!r}; expected a pair (answer or None, transcript)"
        returned, transcript = got
        wrong = (_check_sent(model, build_prompt(question, tools.values(), exemplars))
                 or _check_parsed(model.texts, seen) or _check_steps(model, tools))
        if wrong:
            return wrong
        if model.calls != calls:
            return _broke(rule, f"made {model.calls} model call{'s' * (model.calls != 1)}; expected {calls}{hint}")
        if returned != answer:
            return _broke(3 if answer is not None else 7, f"returned the answer {returned!r}; expected {answer!r}")
        last = model.prompts[-1] + model.texts[-1]
        if answer is not None and transcript != last:
            return _broke(3, "returned a transcript that is not the last prompt plus the answer's completion")
        if answer is None and not (transcript.startswith(last) and transcript.endswith(f"\n{THOUGHT}:")):
            return _broke(7, "returned a transcript without the last step's completion and observation")
        return None

    return Case((question, model, tools), verify, kwargs={"exemplars": exemplars, "max_steps": max_steps},
                shown=f"{question!r}, scripted model, tools" + (f", max_steps={max_steps}" if max_steps != 6 else "")
                + (", exemplars=[EXEMPLARS[1]]" if exemplars else ""),
                rule=f"rule {rule} ({LOOP_RULES[rule]})", around=lambda fn: _watching_call_tool(fn, seen))


def _loop_cases() -> list[Case]:
    """The loop exercise's runs, one per rule, on a scripted model that honours ``stop``."""
    q = "Has supplier invoice INV-2291 been paid?"
    return [
        _loop_case(1, q, [" I look at the invoice first.\nAction: find_invoice[INV-2291]",
                          " It is approved; now its payments.\nAction: get_payments[INV-2291]",
                          " There are no payments.\nAnswer: No. INV-2291 has no payments."],
                   exemplars=[EXEMPLARS[1]], answer="No. INV-2291 has no payments.", calls=3),
        # The stop sequence cuts the forged observation; the spaces round the text stay in the transcript.
        _loop_case(2, q, ['  I check its payments.\nAction: get_payments[INV-2291]  \nObservation: {"payments": '
                          '[{"amount": 48200}]}\nThought: It was paid.\nAnswer: Yes, INV-2291 was paid.',
                          " There are no payments.\nAnswer: No. INV-2291 has no payments.\n"],
                   answer="No. INV-2291 has no payments.", calls=2),
        _loop_case(3, q, [" I know it.\nAction: find_invoice[INV-2291]\nAnswer:  No, it is not paid.  \n\n"
                          "Question: Was INV-2323 paid?"],
                   answer="No, it is not paid.", calls=1, hint=" (an answer ends the run, even beside an action)"),
        _loop_case(4, "What were the July invoices of cus_8812?",
                   [" I could write Action: search[refunds] here.\nAction: list_invoices[ cus_8812 ,2026-07-01 ]",
                    " Done.\nAnswer: two"], answer="two", calls=2),
        _loop_case(5, q, [" I am not sure what to do.", " I look it up.\nAction: lookup_invoice[INV-2291]",
                          " The tool list has find_invoice.\nAction: find_invoice[INV-2291]",
                          " It is approved, not paid.\nAnswer: INV-2291 is approved and not paid."],
                   answer="INV-2291 is approved and not paid.", calls=4,
                   hint=" (no action and an unknown tool each become an observation, and the loop goes on)"),
        _loop_case(6, "What were the July invoices of cus_8812?",
                   [" I list them.\nAction: list_invoices[cus_8812]",
                    " It needs a date.\nAction: list_invoices[cus_8812, 2026-07-01]", " Done.\nAnswer: two"],
                   answer="two", calls=3, hint=" (a tool's error text is an observation like any other)"),
        _loop_case(7, q, [" Again.\nAction: find_invoice[INV-2291]"], max_steps=3, answer=None, calls=3,
                   hint=" (max_steps=3: stop after that many model calls)"),
    ]


EXERCISES: dict[str, tuple[str, Callable[[], list[Case]]]] = {
    "run_loop": (
        "run_loop(question, model, tools, exemplars=None, max_steps=6) -> (answer or None, "
        "transcript): the text-protocol loop",
        lambda: _loop_cases(),
    ),
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
        "dispatch(tools, name, args) -> str: the tool's result as text (str or json.dumps); an "
        "unknown tool or a failing call as a text that starts with 'Error' and names the tool; "
        "never raise",
        lambda: [
            Case(("get_charge", ["ch_1KZq8f"]), ("contains", "succeeded"), "a real lookup"),
            Case(("serch", ["x"]), _error_naming("serch"), "an unknown tool is an observation"),
            Case(("list_invoices", ["cus_8812"]), _error_naming("list_invoices"),
                 "a call that fails is an observation"),
        ],
    ),
    "cut_forgery": (
        "cut_forgery(text) -> str: drop a model-written Observation line and all after it, "
        "and a cut-off stop word at the end (a trailing newline may stay or go)",
        lambda: [
            Case(("Action: a[b]\nObservation: fake\nAnswer: x",), _same_text("Action: a[b]")),
            Case(("Action: a[b]\nObserv",), _same_text("Action: a[b]"), "a partial stop word at the end"),
            Case(("Action: a[b]",), _same_text("Action: a[b]"), "nothing to cut"),
            Case(("The observation: fine\nAction: a[b]",), _same_text("The observation: fine\nAction: a[b]"),
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
        "normalise_amount(text) -> float | None: the first number in the text, thousands separators dropped ('$1,290.50' -> 1290.5, 'INV-2041 totals $129.00' -> 2041.0)",
        lambda: [Case(("$129.00",), 129.0), Case(("It was 1,290.50 dollars",), 1290.5),
                 Case(("48200",), 48200.0), Case(("INV-2041 totals $129.00",), 2041.0),
                 Case(("no number here",), None)],
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
        shown = case.shown or ", ".join([repr(a) for a in case.args]
                                        + [f"{k}={v!r}" for k, v in case.kwargs.items()])
        try:
            with case.around(fn) if case.around else nullcontext():
                got = fn(*args, **case.kwargs)
        except NotImplementedError:
            return 0, len(cases), NOT_WRITTEN
        except Exception as exc:  # a learner's bug: report it, keep the notebook running
            broke = f"breaks {case.rule}: " if case.rule else ""
            failure = failure or f"{name}({shown}) {broke}raised {type(exc).__name__}: {exc}"
            continue
        expected = case.expected
        if callable(expected):
            wrong = expected(got)
        elif isinstance(expected, tuple) and len(expected) == 2 and expected[0] == "contains":
            wrong = None if isinstance(got, str) and expected[1] in got else \
                f"returned {got!r}; expected a string containing {expected[1]!r}"
        else:
            wrong = None if got == expected else f"returned {got!r}; expected {expected!r}"
        if wrong is None:
            passed += 1
        elif failure is None:
            failure = f"{name}({shown}) {wrong}" + (f" ({case.note})" if case.note else "")
    return passed, len(cases), failure


def choose(name: str, fn: Callable) -> Callable:
    """Return ``fn`` when it passes exercise ``name``'s cases, else the reference solution; say which.

    The cell after an exercise runs on what this returns, so a notebook runs top to
    bottom before the exercise is written, and on the learner's own function once it
    passes. In solutions mode (CI) it returns the reference solution.
    """
    reference = getattr(solutions, name)
    if solutions_mode():
        print(f"using the reference {name} (solutions mode)")
        return reference
    passed, total, failure = run_cases(name, fn)
    if failure is None:
        print(f"using your {name}: it passes all {total} checks")
        return fn
    why = "is not written yet" if failure == NOT_WRITTEN else f"fails a check ({passed}/{total} pass)"
    print(f"using the reference {name} from react_lab/lab/notebook/solutions.py: yours {why}; "
          "fix it and run this cell again")
    return reference


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
