"""What an exercise's checker is made of: cases, a model that records, and spies on named calls.

A checker runs the learner's function on :class:`Case` objects. A case for a loop runs it
on a scripted model that records what each call sent (:class:`RecordingModel`,
:class:`RecordingChatModel`) and watches the functions the loop calls by name
(:func:`spying`): ``call_tool``, ``observe``. Every failure names the rule
it breaks, ``breaks rule 3 (stop on an answer): ...`` (:func:`broke`), so a learner reads
which sentence of the notebook their code does not do yet.
"""

from __future__ import annotations

import copy
import re
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Iterator

from ..protocol import MAX_TOKENS

#: Model calls one checked run may make: a loop that ignores its step limit stops here.
MAX_CALLS = 40


@dataclass(frozen=True)
class Case:
    """One check: call the function with ``args`` (and ``kwargs``); compare with ``expected``.

    ``expected`` is the value to return, ``("contains", text)`` for a string holding
    ``text``, or a function ``verify(got) -> str | None`` that returns what is wrong
    (None when nothing is). ``shown`` replaces the arguments in a failure message when
    they are too long to print (a model, a tool set). ``rule`` names the rule the case
    checks (``"rule 3 (stop on an answer)"``), in the message when the function raises
    or returns the wrong value; ``around(fn)`` is a context manager the call runs inside
    (to watch what ``fn`` calls).
    """

    args: tuple
    expected: Any
    note: str = ""
    kwargs: dict = field(default_factory=dict)
    shown: str = ""
    rule: str = ""
    around: Callable[[Callable], ContextManager] | None = None


def broke(rules: dict[int, str], number: int, detail: str) -> str:
    """The failure message for rule ``number``: ``breaks rule 3 (stop on an answer): ...``."""
    return f"breaks rule {number} ({rules[number]}): {detail}"


def rule_of(rules: dict[int, str], number: int) -> str:
    """The name a case carries for rule ``number``: ``rule 3 (stop on an answer)``."""
    return f"rule {number} ({rules[number]})"


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
