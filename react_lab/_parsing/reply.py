"""A reply's text read as the text parser reads a completion: the parser's ``read_reply``.

A native reply's ``content`` (or a best-effort completion) is an answer only when it holds no call
and no call markup. This module holds that reading; the parser's own
:func:`react_lab.lab.agent.parser.parse` is handed in by
:func:`react_lab.lab.agent.parser.read_reply` (the private package never imports the lesson).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from ..protocol import ParseResult, shown, visible
from .answer_calls import arguments_of, call_in_answer, json_value, lost_call
from .calls import cut_off_call
from .formats import find_calls
from .labels import ANY_LABEL, NAME
from .leaks import Leak, find_leaks
from .reasoning import set_aside_reasoning
from .reasons import NAMELESS
from .tokens import decode_markers, markup_piece, without_end_tokens


@dataclass(frozen=True)
class ReplyText:
    """A reply's text read as :func:`react_lab.lab.agent.parser.parse` reads a completion.

    ``answer``: the answer it gives, None when it gives none; ``calls``: the calls written in
    its markup or as JSON (:func:`react_lab._parsing.leaks.find_leaks`); ``saw``: what it
    holds instead of an answer, in words ("a Mistral tool call to create_file, a tool this
    agent does not have"); ``reasoning``: what was set aside as reasoning.
    """

    answer: str | None
    calls: list[Leak]
    saw: str | None = None
    reasoning: str | None = None


def read_reply_text(
    text: str | None,
    tools: Iterable[str] | dict | None,
    parse: Callable[..., ParseResult],
) -> ReplyText:
    """Read a reply's text with ``parse`` (:func:`react_lab.lab.agent.parser.parse`) as it reads a
    completion.

    Reasoning is set aside first (:func:`react_lab._parsing.reasoning.set_aside_reasoning`):
    nothing in it runs or answers. A call written in the text -- in markup or as JSON
    (:func:`react_lab._parsing.leaks.find_leaks`; ``tools`` as there), or as ``parse``
    reads one (``Action: search[x]``, ``search(query="x")``, arguments whose call lost its
    name) -- is never the answer. Harmony's final channel is the answer. Markup that holds
    no call (a ``<tool_call>`` that names no tool) or a special token left in the text (an
    end-of-turn token ends the answer) makes the text no answer. ``saw`` says what it held
    instead, as does a text that opens with a ReAct label (``Thought: I need the charge.``)
    and holds no answer. An answer label (``Answer: 42``) or a finish call gives the answer
    ``parse`` reads. A JSON record (:func:`_record`) and text with none of these are the
    answer as written, byte for byte. Never raises.
    """
    if not isinstance(text, str):
        return ReplyText(None, [])
    try:
        tools = [tools] if isinstance(tools, str) else tools  # one name, not its letters
        names = None if tools is None else list(tools)
        plain, reasoning, aside = set_aside_reasoning(decode_markers(text)[0])
        calls = find_leaks(plain, tools)
        if calls:
            saw = "; ".join(c.describe(names) for c in calls[:3])
            return ReplyText(None, calls, saw, reasoning)
        frame = next(iter(find_calls(plain, limit=1, tools=tools)), None)
        if frame is not None and frame.answer is None:
            saw = f"{frame.format} tool-call markup {frame.problem or 'that holds no call'}"
            return ReplyText(None, [], saw, reasoning)
        if frame is not None:  # Harmony's final channel is the answer; its analysis is reasoning
            plain = frame.answer
            reasoning = "\n".join(r for r in (reasoning, frame.thought) if r) or None
        if frame is None and _record(plain, tools) and call_in_answer(plain, tools) is None:
            return ReplyText(text if aside is None else plain.strip(), [], None, reasoning)
        read = parse(plain, tools=names)
        label = _STEP_LABEL.search(plain) if read.kind != "action" else None
        if read.kind == "error" and ANY_LABEL.match(plain.lstrip()) or label is not None:
            line = (label.group() if label else plain.strip()).strip().split("\n", 1)[0]
            saw = f"{shown(line, 60)}, a ReAct label with no answer"  # "Thought: I need ..."
            return ReplyText(None, [], saw, reasoning)
        # prose around a JSON record ({"status": "paid"}, {"name": "Acme Corp", ...}): data,
        # when no object in it is a declared tool's arguments and it names no tool, and no
        # object is glued to a sentence ("...list files.{"cmd": ...}": stripped call markup)
        data = isinstance(tools, dict) and lost_call(plain, tools) is None
        data = data and _GLUED_OBJECT.search(plain) is None
        record = data and read.kind == "error" and _names_no_tool(read, tools)
        if record and call_in_answer(plain, tools) is None and markup_piece(plain) is None:
            return ReplyText(text if aside is None else plain.strip(), [], None, reasoning)
        if read.kind == "action" or (read.kind == "error" and read.tool is not None):
            saw = (
                f"a tool call to {shown(read.tool, 60)} written as text, "
                f"as the text protocol writes one ({read.dialect or 'action'})"
            )
            return ReplyText(None, [], saw, reasoning)
        if read.kind == "error" and read.reason.startswith(NAMELESS):
            return ReplyText(None, [], "an arguments object that names no tool", reasoning)
        if read.kind == "error" and cut_off_call(plain) is not None:  # '{"name": "search", ...'
            return ReplyText(None, [], "a JSON tool call cut off before its end", reasoning)
        if read.kind == "error" and read.dialect is not None:  # "Answer:", "Answer: search(...)"
            line = plain.strip().split("\n", 1)[0]
            saw = f"{shown(line, 60)}, a label or a call with no plain answer in it"
            return ReplyText(None, [], saw, reasoning)
        if read.kind == "final":  # "Answer: 42", finish(answer="42"): the answer parse reads
            plain = read.answer
        elif (name := call_in_answer(plain, tools)) is not None:  # "Sure. Action: search[x]"
            saw = f"a tool call to {shown(name, 60)} written in the text"
            return ReplyText(None, [], saw, reasoning)
        elif aside is None and frame is None and markup_piece(text) is None and visible(text):
            return ReplyText(text, [])  # an ordinary answer, as it was written
        answer = without_end_tokens(plain.strip())
        piece = markup_piece(answer)
        if piece is not None:
            saw = f"call markup or a special token ({shown(piece, 40)})"
            return ReplyText(None, [], saw, reasoning)
        if not visible(answer):
            saw = f"only reasoning ({aside})" if aside else "no text"
            return ReplyText(None, [], saw, reasoning)
        return ReplyText(answer, [], None, reasoning)
    except Exception:  # noqa: BLE001 -- reading model text must never take the loop down
        return ReplyText(None, [], "text that could not be read", None)


#: A label of a step at a line start anywhere in a reply: an action or an observation the
#: model wrote itself (``Let me check.\nObservation: {...}``) is never an answer.
_STEP_LABEL = re.compile(
    r"^[ \t>*_#]*(?:Action(?:[ \t]*Input)?|Observation)[ \t]*\d*[ \t*]*:", re.M
)


#: An object glued to a word or a sentence's end, as stripped call markup leaves one.
_GLUED_OBJECT = re.compile(r"[\w.!?]\{")


def _names_no_tool(read: ParseResult, tools: dict) -> bool:
    """True if the parser's error is about an object that names no tool: arguments with no name,
    or a ``name`` that is no identifier (``{"name": "Acme Corp", "balance": 42.0}``)."""
    if read.reason.startswith(NAMELESS):
        return True
    return read.tool is not None and read.tool not in tools and not re.fullmatch(NAME, read.tool)


def _record(text: str, tools: Iterable[str] | dict | None) -> bool:
    """True if ``text`` is one JSON object or array (fenced or not) that is data: a record the
    model answers with (``{"status": "paid"}``), not the arguments of a declared tool whose
    name was lost (``{"invoice_id": "INV-2041"}``, with ``tools`` mapping each name to its
    parameters: :func:`react_lab._parsing.answer_calls.arguments_of`)."""
    value = json_value(text)
    return isinstance(value, (dict, list)) and arguments_of(value, tools) is None
