"""Every other way a model writes a call: what the tolerant parser hands over to :func:`read_other`.

:func:`react_lab.lab.agent.parser.parse` reads the ReAct labels and the paper's call,
``Action: tool[input]``. Real completions also write a call as JSON (``{"action": "search",
"action_input": {...}}``, fenced or not, on the Action line, below it, or under an answer
label), as call syntax (``search(query="x")``, a list ``[search(...)]``), as a name glued to
its object (``search{"query": "x"}``), as LangChain's ``Action: tool`` + ``Action Input: ...``,
in another model's native markup (Harmony, DeepSeek, Mistral, Gemma, Qwen, GLM, Kimi, Llama,
...: :mod:`react_lab._parsing.formats`), or on a line of its own with no label at all.
:func:`read_other` reads all of them, at the place the parser asks about.

What it returns is a :data:`Found`: the span of text read, the :class:`ParseResult` (an
action, a final answer, or an error saying what to write instead) and the reasoning the
markup carried. Every reader is linear in the length of the text.
"""

from __future__ import annotations

import re

from ..protocol import ParseResult, clip, shown
from .brackets import bracket_call, object_at
from .calls import (
    call_as_answer,
    clean_input,
    cut_off,
    find_json_call,
    is_tool_name,
    object_without_call,
    paren_call,
    python_calls,
    unwrap,
)
from .formats import GLUED_NAME, Call, find_calls, fitted, relaxed_object
from .labels import ANY_LABEL, FENCE, INPUT_LINE, NAME, end_of_line

#: ``(start, end, result, thought)``: the span of text read, what it is, and the reasoning the
#: markup carried (None when it carried none).
Found = tuple[int, int, ParseResult, str | None]

#: A name glued to the object of its arguments: ``search{"query": "x"}`` (``{`` not matched).
GLUED = re.compile(r"[ \t`*]*(" + NAME + r")(?=\{)")
#: A line opening with a call: quote and markdown marks, a list item's marker (``-``, ``1.``,
#: ``2)``), then ``[`` for a list of calls, the name, and ``(`` or ``{``.
_BARE_CALL = re.compile(
    r"^[ \t>*`]*(?:(?:[-+\u2022]|\d{1,3}[.)])[ \t]+)?(\[[ \t]*)?([^\W\d][\w.]*)[ \t]*([({])",
    re.MULTILINE,
)
_LINE_TAIL = re.compile(r"[ \t`*;\]]*(?:\n|$)")
_BLANK_OR_FENCE_LINE = re.compile(r"[ \t]*(?:" + FENCE + r")?\n")


def read_other(
    text: str,
    tools: list[str] | None = None,
    first: Found | None = None,
    *,
    action: int | None = None,
    answer: int | None = None,
) -> Found | None:
    """A call written in a form other than the labels' own, at the place asked about; or None.

    ``action``: the end of an ``Action:`` label. The call after it, unless it is the paper's
    ``tool[input]`` or a name alone: call syntax ``search("x")``, a list of calls, a name
    glued to its object, a JSON object (which may run past the line; one never closed is an
    error naming the tool), or ``tool`` with its input on an ``Action Input:`` line below. A
    label alone on its line looks for a JSON call below it.

    ``answer``: the end of an answer label. A JSON call written there is the call (fences, a
    ``<tool_call>`` tag or a ``[`` may come first): only one that is unmistakably a call, so
    ``{"name": "Acme", "total": 4200}`` stays an answer.

    Neither: the whole text, with ``first`` the first label the parser read (or None).
    Another model's call markup wins when it starts before ``first`` ends (it then starts
    where ``first`` does, if that is earlier: labels inside markup are not labels); else
    ``first`` is the result. With no label at all, the first JSON call or line that is only a
    call (``search("x")``, ``[search(query="x")]``) is; prose that mentions ``f(x)`` is not.
    ``tools`` (the declared names, or each mapped to its parameters' schemas) fits a markup
    call to them (:func:`react_lab._parsing.formats.fitted`).
    """
    if action is not None:
        return _after_action(text, action)
    if answer is not None:
        call = call_as_answer(text, answer)
        return None if call is None else (*call, None)
    markup = markup_call(text, tools)
    if markup is not None and (first is None or markup[0] < first[1]):
        begin = first[0] if first is not None and first[0] < markup[0] else markup[0]
        return (begin, *markup[1:])
    if first is not None:
        return first
    fallbacks = [c for c in (find_json_call(text, 0), bare_call(text, tools)) if c is not None]
    if not fallbacks:
        return None
    return (*min(fallbacks, key=lambda c: c[0]), None)


# --------------------------------------------------------------------------- on the Action line


def _after_action(text: str, start: int) -> Found | None:
    """The call after an Action label ending at ``start``, in a form other than ``tool[input]``."""
    line_end = end_of_line(text, start)
    rest = text[start:line_end].strip()
    if not rest:  # "Action:" alone on its line: a JSON blob below
        blob = find_json_call(text, start)
        return None if blob is None else (*blob, None)
    call = paren_call(text, start, line_end)
    if call is not None:  # "Action: search(...)": call syntax, read as a call
        return (*call, None)
    listed = _first_listed(rest) if rest.startswith("[") else None  # [search(query="x")]
    if listed is not None:
        return (start, line_end, listed, None)
    glued = GLUED.match(text, start, line_end)
    if glued is not None:  # "Action: search{"query": "x"}": a name glued to its object
        return (*glued_call(text, glued), None)
    if rest.startswith("{"):
        blob = find_json_call(text, start)
        if blob is not None:
            return (*blob, None)
        return (start, line_end, object_without_call(text, text.index("{", start)), None)
    if bracket_call(text, start, line_end) is not None:
        return None  # the paper's tool[input]: the parser reads it
    return _action_input(text, line_end, rest.strip("`*\"' "))


def _first_listed(source: str) -> ParseResult | None:
    """The first of a list of Python-style calls (:func:`python_calls`), as an action; None
    when ``source`` is not only calls."""
    calls = python_calls(source)
    if not calls:
        return None
    name, value = calls[0]
    return ParseResult("action", tool=name, input=value, dialect="call")


def _action_input(text: str, line_end: int, name: str) -> Found | None:
    """``Action: tool`` with its input on an ``Action Input:`` line below (no label between)."""
    inp = INPUT_LINE.search(text, line_end)
    if inp is None or ANY_LABEL.search(text[line_end : inp.start()].replace("Action Input", "")):
        return None
    value, end = _input_value(text, inp.end())
    if isinstance(value, str) and value.startswith("{") and object_at(value, 0)[1] is None:
        return (line_end, end, cut_off(name, "the Action Input object"), None)
    return (
        line_end,
        end,
        ParseResult("action", tool=name, input=value, dialect="action_input"),
        None,
    )


def _input_value(text: str, start: int):
    """The value after ``Action Input:``: an object read by balance, else the rest of the line."""
    line_end = end_of_line(text, start)
    rest = text[start:line_end].strip()
    if not rest or rest.startswith(("{", "```")):
        j = start
        while (m := _BLANK_OR_FENCE_LINE.match(text, j)) is not None:
            j = m.end()  # blank lines and fences before the value
        obj = object_at(text, j)
        if obj is not None and obj[1] is not None:
            return clean_input(text[obj[0] : obj[1]]), obj[1]
        if not rest:
            nxt = end_of_line(text, j)
            return clean_input(text[j:nxt]), nxt
    return clean_input(rest), line_end


# --------------------------------------------------------------------------- calls outside labels


def markup_call(text: str, tools=None) -> Found | None:
    """The first call written in native markup (:func:`react_lab._parsing.formats.find_calls`).

    Its result is an action (its ``reason`` names the format, for the message if the tool is
    unknown), a final answer (Harmony's final channel), or an error naming the format and
    what is wrong ("a DeepSeek tool call to search is cut off before its arguments"); its
    thought is reasoning the markup carries. None if there is no markup. ``tools``: the
    declared names, or each name mapped to its parameters, as
    :func:`react_lab._parsing.leaks.find_leaks` takes them.
    """
    call = next(iter(find_calls(text, limit=1, tools=tools)), None)
    if call is None:
        return None
    call = fitted(call, tools)
    dialect = re.sub(r"\W+", "_", call.format.lower()).strip("_")
    if call.answer is not None:
        result = ParseResult("final", answer=call.answer.strip(), dialect=dialect)
    elif call.name is None or call.problem is not None:
        result = ParseResult("error", tool=call.name, dialect=dialect, reason=_refusal(call))
    else:
        reason = f"a {call.format} tool call"
        result = ParseResult(
            "action", tool=call.name, input=call.arguments, dialect=dialect, reason=reason
        )
    return call.start, call.end, result, call.thought


def _refusal(call: Call) -> str:
    """Why a call read from markup is not run: it names no tool, or its problem."""
    if call.name is None:
        problem = call.problem or "that names no tool"
        return (
            f"found {call.format} tool-call markup {problem}, which this protocol does "
            "not run; write 'Action: tool_name[arguments]'"
        )
    # a header may hold any text; a name run into its first key names no tool
    name = clip(call.name, 60) if is_tool_name(call.name) else "tool_name"
    name = "tool_name" if call.problem.startswith(GLUED_NAME) else name
    return (
        f"a {call.format} tool call to {shown(call.name, 60)} {call.problem}; write the "
        f"whole call again as 'Action: {name}[arguments]'"
    )


def glued_call(text: str, m: re.Match) -> tuple[int, int, ParseResult]:
    """``NAME{...}`` (``m`` from :data:`GLUED`) as ``(start, end, result)``: bare keys read."""
    name, brace = m.group(1), m.end()
    value = relaxed_object(text, brace)
    if value is None:
        short = clip(name, 40)
        reason = (
            f"a call written as {short}{{...}} whose arguments cannot be read; write "
            f"'Action: {short}[arguments]' or 'Action: {short}({{\"key\": \"value\"}})'"
        )
        error = ParseResult("error", tool=name, dialect="glued", reason=reason)
        return m.start(1), end_of_line(text, brace), error
    action = ParseResult("action", tool=name, input=unwrap(value[0]), dialect="glued")
    return m.start(1), value[1], action


def bare_call(text: str, tools=None) -> tuple[int, int, ParseResult] | None:
    """The first line that is only a call, as ``(start, end, result)``.

    ``search("x")``, ``[search(query="x")]`` (a Python-style list: its first call),
    ``search{"query": "x"}``, on a list item's line too (``1. search("x")``). The text
    parser's last resort, for a completion with no label: prose that mentions ``f(x)``
    mid-line is not a call, nor is a word, a space and a parenthesis (``Yes (the charge was
    declined)``, ``Paid (in full)``) unless the word is one of ``tools`` (``search ("x")``).
    The first 16 such lines are tried.
    """
    for i, m in enumerate(_BARE_CALL.finditer(text)):
        if i >= 16:
            break
        line_end = end_of_line(text, m.start())
        if m.group(1):  # [a(k=1), b()]
            listed = _first_listed(text[m.start(1) : line_end].strip(" \t>*"))
            if listed is not None:
                return (m.start(), line_end, listed)
            continue
        if m.group(3) == "(":
            spaced = m.start(3) > m.end(2)
            if spaced and (tools is None or m.group(2) not in tools):
                continue  # "Yes (the charge was declined)": a word before a parenthesis, prose
            call = paren_call(text, m.start(2), line_end)
            closed = call is not None and text[call[1] - 1] == ")"
        else:
            glued = GLUED.match(text, m.start(2))  # None for "name {": a space is prose
            call = glued_call(text, glued) if glued else None
            closed = call is not None and (call[2].kind == "error" or text[call[1] - 1] == "}")
        if call is not None and closed and _LINE_TAIL.match(text, call[1]):
            return call
    return None
