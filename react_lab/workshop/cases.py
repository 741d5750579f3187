"""What an exercise's checker is made of: its rule table, the engine that runs it, and the
scripted models and spies it watches a run with.

An exercise is data (learntools' and okpy's shape): its inputs, :class:`Case` rows (the
arguments, or a scripted model, and what the run must give), and its rule table,
:class:`Check` rows (a numbered rule, the property, the rule's words). One engine,
:func:`first_broken`, holds a run to the table and blames the first row it breaks::

    breaks rule 3 (stop on an answer): went on after ' Done.\nAnswer: two', which has ...

so a learner reads which sentence of the notebook their code does not do yet. A new rule is
a row. A loop's run is recorded by a scripted model that records what each call sent
(:class:`RecordingModel`, :class:`RecordingChatModel`) and by spies on the functions it calls
by name (:func:`spying`): ``call_tool``, ``observe``.
"""

from __future__ import annotations

import copy
import re
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, ContextManager, Iterator

from ..protocol import MAX_TOKENS

#: Model calls one checked run may make: a loop that ignores its step limit stops here.
MAX_CALLS = 40

#: A :class:`Check`'s rule when it is the rule its input was written for (``Case.rule``).
ITS_RULE = "rule"
#: A :class:`Check`'s rule when it is the rule of how the run ends (the answer, the step limit).
END_RULE = "end_rule"


@dataclass(frozen=True)
class Case:
    """One input of an exercise: call the function with ``args`` (and ``kwargs``).

    ``expected`` is what it must return, ``("contains", text)`` for a string holding
    ``text``, or (a bench exercise) a function ``verify(got) -> str | None`` that returns
    what is wrong; ``note`` says why. ``rule`` is the number of the rule the input is
    written for (:data:`ITS_RULE` in the table). ``shown`` replaces the arguments in a
    failure message when they are too long to print (a model, a tool set); ``around(fn)``
    is a context manager the call runs inside (to watch what ``fn`` calls); ``facts(got,
    error)`` turns what the run did into the facts the table's rows read (default:
    :func:`value_facts`).
    """

    args: tuple
    expected: Any
    note: str = ""
    kwargs: dict = field(default_factory=dict)
    shown: str = ""
    rule: int | None = None
    around: Callable[[Callable], ContextManager] | None = None
    facts: Callable[[Any, BaseException | None], Any] | None = None


@dataclass(frozen=True)
class Check:
    """A row of an exercise's rule table: a property every run of the exercise must have.

    ``holds(facts) -> bool`` is the property; ``says`` is what is wrong and what to change,
    filled in from the facts as ``f`` (``"returned {f.got!r:.60}"``). With ``each`` (the
    name of a list in the facts: ``"steps"``) the property must hold on every item, ``s``
    in ``says``. ``rule`` is the rule's number (a row whose number the exercise has not is
    skipped: the loop's rows for rule 8 check only the guarded loop), or the name of the
    fact that holds it (:data:`ITS_RULE`, :data:`END_RULE`).
    """

    rule: int | str
    holds: Callable[[Any], Any]
    says: str
    each: str = ""


#: A function that raised broke the rule its input was written for (a row of most tables).
RAISED = Check(ITS_RULE, lambda f: not f.raised, "raised {f.raised}")


def first_broken(checks: tuple[Check, ...], facts: Any, rules: dict[int, str]) -> str | None:
    """The failure of the first row of ``checks`` that ``facts`` break, or None: the engine.

    A row of a rule in ``rules`` fails as ``breaks rule N (name): ...``; a bench exercise's
    rows (no rules) give the words alone.
    """
    for row in checks:
        if isinstance(row.rule, int) and row.rule not in rules:
            continue
        for item in getattr(facts, row.each) if row.each else [facts]:
            if not row.holds(item):
                number = getattr(facts, row.rule) if isinstance(row.rule, str) else row.rule
                said = row.says.format(f=facts, s=item)
                return broke(rules, number, said) if number in rules else said
    return None


def raised(error: BaseException | None) -> str:
    """What a run raised, as a failure says it (``KeyError: 'x'``); "" when it raised nothing."""
    return f"{type(error).__name__}: {error}" if error is not None else ""


def raised_inside(error: BaseException | None) -> bool:
    """True when ``error`` came from inside the function checked, not from calling it (a
    keyword it does not take): its traceback goes on past the checker's call."""
    trace = error.__traceback__ if error is not None else None
    return trace is not None and trace.tb_next is not None


def value_facts(case: Case, got: Any, error: BaseException | None) -> SimpleNamespace:
    """The facts of a call that returns a value: what it got and what it should have.

    ``because`` is the case's note as a failure ends with it; ``wrong`` what a bench case's
    comparison found wrong (None when nothing).
    """
    because = f" ({case.note})" if case.note else ""
    facts = SimpleNamespace(
        got=got, want=case.expected, why=case.note, because=because, args=case.args
    )
    facts.rule, facts.raised, facts.wrong = case.rule, raised(error), None
    if not error:
        facts.wrong = _compared(got, case.expected)
        facts.wrong = facts.wrong and facts.wrong + because
    return facts


def _compared(got: Any, expected: Any) -> str | None:
    """What is wrong with ``got`` against a bench case's ``expected``, or None."""
    try:
        if callable(expected):
            return expected(got)
        if isinstance(expected, tuple) and len(expected) == 2 and expected[0] == "contains":
            if isinstance(got, str) and expected[1] in got:
                return None
            return f"returned {got!r}; expected a string containing {expected[1]!r}"
        return None if got == expected else f"returned {got!r}; expected {expected!r}"
    except Exception as exc:  # what fn returned cannot even be compared (its __eq__ raises)
        return (
            f"returned {type(got).__name__}, which cannot be checked ({type(exc).__name__}: {exc})"
        )


#: A bench exercise's table: the value its case expects.
VALUE_CHECKS = (RAISED, Check(ITS_RULE, lambda f: f.wrong is None, "{f.wrong}"))


def broke(rules: dict[int, str], number: int, detail: str) -> str:
    """The failure message for rule ``number``: ``breaks rule 3 (stop on an answer): ...``."""
    return f"breaks rule {number} ({rules[number]}): {detail}"


#: Finds the rule a failure message names.
RULE_RE = re.compile(r"breaks rule (\d+) \(([^)]*)\)")


def named_rule(failure: str | None) -> tuple[int, str] | None:
    """The ``(number, name)`` of the rule a failure message names, or None."""
    match = RULE_RE.search(failure or "")
    return (int(match.group(1)), match.group(2)) if match else None


class TooManyCalls(Exception):
    """A checked run made more than :data:`MAX_CALLS` model calls."""


def _count_call(made: int) -> None:
    """Let a checked run that has made ``made`` model calls make one more.

    Raises :class:`TooManyCalls` once it has made :data:`MAX_CALLS`.
    """
    if made >= MAX_CALLS:
        raise TooManyCalls(f"made more than {MAX_CALLS} model calls")


def _wrong_protocol(name: str, other: str, hint: str) -> AttributeError:
    """The error a recording model raises for an attribute ``name`` it does not have.

    When ``name`` is ``other``, the other protocol's method (a text loop called ``chat``, a
    native loop ``complete``), the error is ``hint``: which model this is, and what to send.
    """
    return AttributeError(hint if name == other else name)


class RecordingModel:
    """A scripted model (stop applied as a provider does) recording what each call sent and got.

    ``sent`` holds ``(stop, max_tokens)`` per call, ``max_tokens`` None when the caller left
    it out; ``texts`` the completion text each call returned; ``prompts`` every prompt.
    Raises :class:`TooManyCalls` past :data:`MAX_CALLS` calls.
    """

    def __init__(self, completions):
        from ..lab.backends.scripted import ScriptedModel

        self.inner, self.sent, self.texts = ScriptedModel(completions), [], []

    @property
    def prompts(self) -> list[str]:
        return self.inner.prompts

    @property
    def calls(self) -> int:
        return self.inner.calls

    def __getattr__(self, name):
        raise _wrong_protocol(
            name,
            "chat",
            "this is a text-completion model: it has complete(prompt, "
            "stop=..., max_tokens=...), not chat(...)",
        )

    def complete(self, prompt, *, stop=None, max_tokens=None):
        _count_call(self.calls)
        self.sent.append((stop, max_tokens))
        limit = MAX_TOKENS if max_tokens is None else max_tokens
        completion = self.inner.complete(prompt, stop=stop, max_tokens=limit)
        self.texts.append(completion.text)
        return completion


class RecordingChatModel:
    """A scripted chat model recording each request: its messages (copied), tools and keywords.

    Replies come from :class:`react_lab.lab.backends.chat.ScriptedChatModel` (the last one
    repeats). ``requests`` holds ``(messages, tools, kwargs)`` per call, ``replies`` each
    :class:`react_lab.lab.backends.chat.ChatReply`. A ``stop`` argument is recorded, not
    passed on (a chat backend takes none). Raises :class:`TooManyCalls` past :data:`MAX_CALLS`.
    """

    def __init__(self, replies):
        from ..lab.backends.chat import ScriptedChatModel

        self.inner, self.requests, self.replies = ScriptedChatModel(replies), [], []

    def __getattr__(self, name):
        raise _wrong_protocol(
            name,
            "complete",
            "this is a chat model: it has chat(messages, tools=...), not "
            "complete(...); send the messages, not a transcript",
        )

    def chat(self, messages, tools=None, **kwargs):
        _count_call(len(self.requests))
        self.requests.append((copy.deepcopy(list(messages)), copy.deepcopy(tools), dict(kwargs)))
        passed = {k: v for k, v in kwargs.items() if k in ("max_tokens", "tool_choice")}
        reply = self.inner.chat(messages, tools, **passed)
        self.replies.append(reply)
        return reply


def namespaces(fn: Callable, names: tuple[str, ...] = ()) -> list[dict]:
    """The global namespaces ``fn`` finds names in: its own, and those of the ``names`` it calls.

    A learner's loop finds ``observe`` in its notebook's namespace; the reference
    ``observe`` standing in for theirs finds ``call_tool`` in another module's.
    """
    spaces: list[dict] = []
    own = getattr(fn, "__globals__", None)
    for space in [own] + [
        getattr(own.get(n), "__globals__", None) for n in names if isinstance(own, dict)
    ]:
        if isinstance(space, dict) and all(space is not s for s in spaces):
            spaces.append(space)
    return spaces


@contextmanager
def spying(
    spaces: list[dict], name: str, log: list, note: Callable[[], Any] | None = None
) -> Iterator[bool]:
    """While the block runs, calls to the global ``name`` in ``spaces`` are recorded in ``log``.

    Each entry is ``(args, kwargs, result)``, or with ``note`` ``(args, kwargs, result,
    note() before, note() after)`` (say, a model's call count). The name is swapped only
    where it is defined, and put back afterwards; the block gets True when it was
    swapped somewhere.
    """
    swapped = []
    for space in spaces:
        original = space.get(name)
        if callable(original) and not getattr(original, "_spy", False):

            def spy(*args, _original=original, **kwargs):
                before = note() if note else None
                result = _original(*args, **kwargs)
                log.append((args, kwargs, result) + ((before, note()) if note else ()))
                return result

            spy._spy = True
            space[name] = spy
            swapped.append((space, original))
    try:
        yield bool(swapped)
    finally:
        for space, original in swapped:
            space[name] = original


@contextmanager
def watching_call_tool(fn: Callable, seen: list, through: tuple[str, ...] = ()) -> Iterator[None]:
    """Record each ``(tool, args)`` that ``fn`` (or the ``through`` it calls) gives ``call_tool``.

    ``call_tool`` strips arguments itself, so an observation cannot show whether they were
    stripped; the call can. The name is swapped in those namespaces and in
    :mod:`react_lab.tools` (an import inside ``fn``), and put back afterwards. Code that
    reaches ``call_tool`` another way is not watched; its observations are still checked.
    """
    from ..tools import call_tool

    def recording(tools, name, args):
        seen.append((name, args))
        return call_tool(tools, name, args)

    spaces = [
        ns
        for ns in namespaces(fn, through) + [vars(sys.modules[call_tool.__module__])]
        if ns.get("call_tool") is call_tool
    ]
    for ns in spaces:
        ns["call_tool"] = recording
    try:
        yield
    finally:
        for ns in spaces:
            ns["call_tool"] = call_tool


@contextmanager
def all_of(*managers: Callable[[], ContextManager]) -> Iterator[None]:
    """Enter each of ``managers()`` in order, for the length of one block."""
    with ExitStack() as stack:
        for make in managers:
            stack.enter_context(make())
        yield
