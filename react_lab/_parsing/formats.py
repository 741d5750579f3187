"""Native tool-call markup written into text: every model's own call format, read into calls.

A model trained on its chat template writes a tool call in that template's markup. When
the server does not turn the markup into ``tool_calls`` (or the text protocol is in use),
it reaches us as text. Each vendor's markup is a row of one table, :data:`FORMATS`: where a
call opens and closes, how the tool's name and its arguments are written (the row's shape,
which names its reader), how values written as text are typed, whether they are
entity-escaped. The shapes, one reader each:

* JSON in a frame (``<tool_call>{...}</tool_call>``, ``<|tool_call|>[...]``), where an
  object's only key may be the tool (``keyed``), or Python-style calls (``[NAME(k=v)]``);
* a header that names the tool, then a JSON object (``named``: ``>>>NAME``,
  ``[TOOL_CALLS]NAME[ARGS]{...}``, a recipient ``to=functions.NAME json{...}``); a call
  between a section's tokens, whose separator token says whose it is (``section``:
  ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}``); messages on a vendor's channels
  (``channels``);
* a name glued to an object whose keys are bare words and whose strings stand between the
  row's quote token (``glued``: ``<|tool_call>call:NAME{key:<|"|>value<|"|>}``);
* arguments as elements: ``<function=NAME><parameter=k>v</parameter></function>`` and
  ``<invoke name="NAME"><parameter name="k">v</parameter></invoke>`` under any prefix
  (``elements``), key/value ``pairs`` (``NAME<arg_key>k</arg_key><arg_value>v</arg_value>``),
  an XML element named after a declared tool (``element``).

A call whose markup lost a tag is read when the next tag ends what the missing one would
have closed (parameters and calls do not nest: a ``<parameter>`` value ends at the next
``<parameter`` or at ``</function>``; a pair's value at the next ``<arg_key>``), and when the
first call's begin token of a section is missing; what no tag accounts for, and a name run
into its first key that no declared tool splits (:func:`split_glued`), is a ``problem``
naming the format and what is missing, never a dropped argument.

Special tokens are matched in every spelling they reach text in: ``|`` or the full-width
``｜`` (U+FF5C), words joined by ``_``, ``▁`` (U+2581) or a space. Element values are read
as JSON when they are JSON (``8``, ``true``, ``{...}``), else kept as text -- what the
parsers do without a schema. Sources: the chat templates, llama.cpp's ``common/chat*``
parsers and vLLM's ``tool_parsers``.

:func:`find_calls` tries the first few frames only, each read forward once: linear, never raises.
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable

from ..protocol import shown
from .brackets import object_at
from .calls import find_json_call, load_object, python_calls, unwrap
from .json_errors import finite_number
from .labels import FENCE, NAME

#: Frames tried per text: enough for any real completion, and a bound on the work.
MAX_FRAMES = 16


@dataclass(frozen=True)
class Call:
    """One call read from markup: its span, format, tool and arguments, or what is wrong with it.

    ``arguments`` is a dict, or the text written where they belong (a problem says why it
    cannot be used). ``answer`` is set instead of ``name`` for a final channel; ``thought``
    holds reasoning the markup carries (an analysis channel). ``texts`` holds the values as
    written, for rows whose values are text (``<parameter>``, ``<arg_value>``: a row's
    ``values`` is ``schema``): :func:`typed` reads each by its declared type.
    """

    start: int
    end: int
    format: str
    name: str | None = None
    arguments: Any = None
    problem: str | None = None
    answer: str | None = None
    thought: str | None = None
    texts: dict | None = None


def _token(words: str) -> str:
    """A regex for the special token ``<|words|>`` in any spelling.

    ``|`` or ``｜`` around it, its words joined by ``_``, ``▁`` or a space.
    """
    return r"<[|｜]" + r"[_▁ ]".join(words.split()) + r"[|｜]>"


_WS = re.compile(r"\s*")
_FENCE = re.compile(r"\s*(?:" + FENCE + r"\n)?\s*")
_CLOSING_FENCE = re.compile(r"\s*```")
_NAME = re.compile(r"[ \t]*(" + NAME + ")")
#: What may stand before an element's tag name: ``｜DSML｜`` or a namespace (``minimax:``).
_PREFIX = r"(?:[|｜]DSML[|｜]|[A-Za-z]\w*:)"


def _skip(text: str, pos: int, pattern: re.Pattern = _WS) -> int:  # the position after what matches
    return pattern.match(text, pos).end()


def _value(raw: str) -> Any:
    """An element's value: JSON when it is JSON (a finite number, true, an object), else text.

    What a value is when its type is not declared (:func:`typed`).
    """
    text = raw.strip()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return text if isinstance(value, float) and not math.isfinite(value) else value


def _json_args(text: str, pos: int, end: int, fmt: str, name: str | None, start: int) -> Call:
    """The call whose arguments are the JSON object at ``pos``, ending by ``end``.

    Spaces and a fence may come before the object.
    """
    at = _skip(text, pos, _FENCE)
    span = object_at(text, at)
    if span is None:
        rest = text[at:end].strip()
        problem = "has no arguments object" if rest else "ends before its arguments"
        return Call(start, end, fmt, name, rest, problem)
    j, close = span
    if close is None or close > end:  # never closed, or closed past the frame's own end token
        problem = "ends before its arguments object is closed"
        return Call(start, len(text) if close is None else close, fmt, name, text[j:end], problem)
    value = load_object(text[j:close])
    if not isinstance(value, dict):
        problem = "has arguments that are not a JSON object"
        return Call(start, close, fmt, name, text[j:close], problem)
    fence = _CLOSING_FENCE.match(text, close)
    return Call(start, fence.end() if fence else close, fmt, name, unwrap(value))


# --------------------------------------------------------------------------- JSON in a frame


def _json_frame(
    text: str, start: int, pos: int, end: int, fmt: str, keyed: bool = False
) -> list[Call]:
    """Every JSON call in ``text[pos:end]`` (a list of calls or one object), or one nameless Call.

    ``keyed``: an object's only key is the tool, and its value the arguments.
    """
    calls, at = [], pos
    body = text[:end]
    while len(calls) < MAX_FRAMES:
        hit = find_json_call(body, at)
        if hit is None or hit[2].kind == "error":
            break
        j, close, result = hit
        if result.kind == "final":
            calls.append(Call(start, close, fmt, answer=result.answer))
        else:
            calls.append(Call(start, close, fmt, result.tool.strip(), unwrap(result.input)))
        at = close
    if calls or not keyed:
        return calls or [_nameless(text, start, pos, end, fmt)]
    span = object_at(body, _skip(body, pos, re.compile(r"[\s\[]*")))
    obj = load_object(body[span[0] : span[1]]) if span and span[1] else None
    if isinstance(obj, dict) and len(obj) == 1:
        ((name, args),) = obj.items()
        if isinstance(args, dict):
            return [Call(start, span[1], fmt, str(name), unwrap(args))]
    return [_nameless(text, start, pos, end, fmt)]


def _nameless(text: str, start: int, pos: int, end: int, fmt: str) -> Call:
    inside = text[pos:end].strip()
    problem = "that names no tool" if inside else "that is empty"
    return Call(start, end, fmt, None, inside or None, problem)


# --------------------------------------------------------------------------- frames naming the tool

_MESSAGE = re.compile(r"<\|message\|>")
_BODY_END = re.compile(r"<\|(?:end|call|return|start|channel)\|>")
_TO = re.compile(r"\bto=([^\s<]+)")
_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")


def _channels(text: str, m: re.Match, row: Format, tools=None) -> list[Call]:
    """Messages from ``m``: the first call (a recipient ``to=``) or final answer.

    The analysis messages before it are the call's thought.
    """
    head, pos, thoughts, channels = m.start(), m.start(), [], []
    for _ in range(MAX_FRAMES):
        msg = _MESSAGE.search(text, pos)
        if msg is None:
            break
        header = text[head : msg.start()]
        stop = _BODY_END.search(text, msg.end())
        body_end = stop.start() if stop else len(text)
        body = text[msg.end() : body_end].strip()
        to, channel = _TO.search(header), _CHANNEL.search(header)
        thought = "\n".join(thoughts) or None
        if to and to.group(1) != "assistant":
            name = to.group(1).removeprefix("functions.")
            end = stop.end() if stop and stop.group() == "<|call|>" else body_end
            if not body.startswith("{"):
                problem = (
                    "has arguments that are not a JSON object"
                    if body
                    else "ends before its arguments"
                )
                return [Call(m.start(), end, row.name, name, body, problem, thought=thought)]
            call = _json_args(text, msg.end(), body_end, row.name, name, m.start())
            return [replace(call, end=max(call.end, end), thought=thought)]
        if channel and channel.group(1) == "final":
            return [Call(m.start(), body_end, row.name, answer=body, thought=thought)]
        if channel and channel.group(1) == "commentary" and body.startswith("{"):
            problem = (
                "on the commentary channel with no recipient (to=functions.NAME): its name was lost"
            )
            return [Call(m.start(), body_end, row.name, None, body, problem, thought=thought)]
        thoughts.append(body)
        channels.append(channel.group(1) if channel else "analysis")
        # <|end|> closes a message; <|start|> and <|channel|> already open the next header
        head = pos = (
            stop.end()
            if stop and stop.group() in ("<|end|>", "<|call|>", "<|return|>")
            else body_end
        )
        if stop is None:
            break
    thought = "\n".join(thoughts) or None
    to = _TO.search(text, head, min(len(text), head + 400))
    if to and to.group(1) != "assistant":  # a recipient, then the text ends before <|message|>
        name = to.group(1).removeprefix("functions.")
        problem = "ends before its arguments"
        return [Call(m.start(), len(text), row.name, name, None, problem, thought=thought)]
    end = pos if pos > m.start() else len(text)
    said = " and ".join(dict.fromkeys(channels or ["analysis"]))
    problem = f"that holds only messages on the {said} channel, no call and no final message"
    return [Call(m.start(), end, row.name, None, None, problem, thought=thought)]


def _section(text: str, m: re.Match, row: Format, tools=None) -> list[Call]:
    """One call of a section: a header, a separator token, then the arguments.

    The first row whose separator (:attr:`Format.sep`) is the one written and whose ``head``
    fits the header reads it (with no separator, the opening's row says what is missing). The
    header names the tool, or leaves the name to what follows the separator: the name on its
    own line and a (fenced) JSON object, or elements read by their own rows (a row that
    ``names_calls`` names them).
    """
    stop = _section_stops().search(text, m.end())
    seg_end = stop.start() if stop else len(text)
    end = stop.end() if stop and stop.group("end") else seg_end
    sep = _union("sep").search(text, m.end(), seg_end)
    header = text[m.end() : sep.start() if sep else seg_end].strip()
    if sep is None:
        return [Call(m.start(), end, row.name, header or None, None, "ends before its arguments")]
    row, head = next(
        (r, h)
        for r in FORMATS
        if r.sep
        and re.compile(r.sep).match(text, sep.start())
        and (h := re.fullmatch(r.head, header, re.DOTALL))
    )
    name = head.groupdict().get("name")
    if row.names_calls:
        inner = _union(shape="elements").search(text, sep.end(), seg_end)
        calls = _elements(text, inner, _row(inner), fmt=row.name) if inner else []
        calls = [replace(c, start=m.start(), end=max(end, c.end)) for c in calls]
        return calls or [Call(m.start(), end, row.name, None, None, "that names no tool")]
    pos = sep.end()
    if name is None:  # the name on its own line after the separator, then fenced JSON
        line = _NAME.match(text, pos)
        if line is None:
            return [Call(m.start(), end, row.name, None, None, "that names no tool")]
        name, pos = line.group(1), line.end()
    return [replace(_json_args(text, pos, seg_end, row.name, name, m.start()), end=end)]


def _sections(text: str, m: re.Match, row: Format, tools=None) -> list[Call]:
    """A section token around the calls: the calls come next (their first begin token may be
    left out: ``NAME<sep>{...}`` follows), or none come and the section is all there is."""
    nxt = _union().search(text, m.end())
    stop = _section_stops().search(text, m.end())
    no_call_next = nxt is None or _row(nxt).shape != "section"
    if no_call_next and _union("sep").search(text, m.end(), stop.start() if stop else len(text)):
        return _section(text, m, row)
    if not no_call_next:
        return []
    return [Call(m.start(), len(text), row.name, None, None, "that ends before its first call")]


def _named(text: str, m: re.Match, row: Format, tools=None) -> list[Call]:
    """The row's ``head`` naming the tool after the opening, then the JSON object of its
    arguments; a JSON list or object right after the opening holds JSON calls instead (up to
    the row's next opening). A row of a declared tool's name reads only a reply that is that
    call and nothing else."""
    pos = _skip(text, m.end())
    if text.startswith(("[", "{"), pos):
        nxt = re.compile(row.opens).search(text, pos)
        return _json_frame(text, m.start(), pos, nxt.start() if nxt else len(text), row.name)
    head = re.compile(row.head).match(text, m.end())
    call = head and _json_args(text, head.end(), len(text), row.name, head["name"], m.start())
    if row.declared:
        return [call] if call and call.problem is None and not text[call.end :].strip() else []
    return [call or Call(m.start(), pos, row.name, None, None, "that names no tool")]


# --------------------------------------------------------------------------- a name glued to it


def _glued(text: str, m: re.Match, row: Format, tools=None) -> list[Call]:
    """The row's ``head`` naming the tool, glued to an object whose keys may be bare words and
    whose strings stand between the row's ``quote`` (``call:NAME{key:<|"|>v<|"|>,...}``)."""
    head = re.compile(row.head).match(text, m.end())
    if head is None:
        return [Call(m.start(), m.end(), row.name, None, None, "that names no tool")]
    value = relaxed_object(text, head.end(), row.quote)
    if value is None:
        written = text[head.end() : head.end() + 200]
        problem = "has arguments that cannot be read, or that are never closed"
        return [Call(m.start(), len(text), row.name, head["name"], written, problem)]
    after = re.compile(r"\s*(?:" + row.closes + ")").match(text, value[1])
    end = after.end() if after else value[1]
    return [Call(m.start(), end, row.name, head["name"], unwrap(value[0]))]


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_WORDS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_WORD = re.compile("|".join(_WORDS))
_KEY = re.compile(r"[^\s:{}\[\],\"'<>][^:{}\[\],\"'\n<>]{0,100}")
_DECODER = json.JSONDecoder()


def relaxed_object(text: str, pos: int, delim: str | None = None) -> tuple[dict, int] | None:
    """The object at ``pos`` whose keys may be bare words (``{city: "Berlin", n: 3}``), and its end.

    Values are JSON values, bare ``true``/``false``/``null``, or strings between two ``delim``
    tokens (a row's ``quote``, ``<|"|>``: its strings may hold plain quotes). None if it is
    not one, or is nested deeper than 32. Reads forward once from ``pos``.
    """
    try:
        value = _relaxed(text, _skip(text, pos), delim, 0)
    except (ValueError, RecursionError):
        return None
    return value if value is not None and isinstance(value[0], dict) else None


def _relaxed(text: str, pos: int, delim: str | None, depth: int):
    if depth > 32 or pos >= len(text):
        return None
    if delim and text.startswith(delim, pos):
        close = text.find(delim, pos + len(delim))
        return None if close < 0 else (text[pos + len(delim) : close], close + len(delim))
    ch = text[pos]
    if ch == '"':
        return _DECODER.raw_decode(text, pos)
    if ch in "{[":
        return _relaxed_container(text, pos, delim, depth)
    m = _NUMBER.match(text, pos)
    if m:  # a number too large for a float (1e400) is no value: JSON has no Infinity
        return json.loads(m.group(), parse_float=finite_number), m.end()
    m = _WORD.match(text, pos)
    return (_WORDS[m.group()], m.end()) if m else None


def _relaxed_container(text: str, pos: int, delim: str | None, depth: int):
    is_object = text[pos] == "{"
    out: Any = {} if is_object else []
    closing = "}" if is_object else "]"
    pos = _skip(text, pos + 1)
    if text.startswith(closing, pos):
        return out, pos + 1
    while True:
        if is_object:
            if text.startswith('"', pos):
                key, pos = _DECODER.raw_decode(text, pos)
            else:
                m = _KEY.match(text, pos)
                if m is None:
                    return None
                key, pos = m.group().strip(), m.end()
            pos = _skip(text, pos)
            if not text.startswith(":", pos):
                return None
            pos = _skip(text, pos + 1)
        item = _relaxed(text, pos, delim, depth + 1)
        if item is None:
            return None
        if is_object:
            out[key] = item[0]
        else:
            out.append(item[0])
        pos = _skip(text, item[1])
        if text.startswith(closing, pos):
            return out, pos + 1
        if not text.startswith(",", pos):
            return None
        pos = _skip(text, pos + 1)


# --------------------------------------------------------------------------- arguments as elements

#: A call's opening tag: ``<function=NAME>`` (its ``>`` may be left out before a ``{``) or
#: ``<invoke name="NAME">``, under any prefix; the element rows are its kinds.
_FUNCTION_EQ = r"function=(?P<eq>[^>{\n]{1,100})(?:>|(?=\{))"
_NAME_ATTR = (
    r"(?:invoke|function)[ \t]+name=(?:\"(?P<dq>[^\"'>\n]{1,100})\"|'(?P<sq>[^\"'>\n]{1,100})'"
    r"|(?P<attr>[^\"'>\n]{1,100}))[^>\n]{0,100}>"
)
_INVOKE = re.compile(r"<(?P<ns>" + _PREFIX + f")?(?:{_FUNCTION_EQ}|{_NAME_ATTR})")


def _anonymous(pattern: str) -> str:
    """``pattern`` with its named groups unnamed: a row's opening, one group of a union."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


_PARAM = re.compile(
    "<" + _PREFIX + r"?parameter(?:=(?P<eq>[^>\n]{1,100})|[ \t]+name="
    r"(?P<q>[\"']?)(?P<attr>[^\"'>\n]{1,100})(?P=q)(?P<rest>[^>\n]{0,100}))>"
)
#: A parameter's closing tag as models garble it: ``</parameter/>``, ``</parameter1>``, fused
#: with the next closing tag (``</parameter_function>``), or cut before its ``>``
#: (sglang#27336).
_PARAM_CLOSE = re.compile("</" + _PREFIX + r"?parameter[\w/]{0,20}>?")
#: The closing tag of what holds a call: a ``</tool_call>`` after a bare ``<function=NAME>``.
_OUTER_CLOSE = re.compile("</" + _PREFIX + r"?(?:tool_call|function_calls)>")
#: Closing tags left between a call's parameters (a duplicate ``</parameter>``): structure,
#: not text.
_CLOSING_TAGS = re.compile(
    "</" + _PREFIX + r"?(?:parameter|function|invoke|tool_call)[\w/]{0,20}>?"
)
_LETTER = re.compile(r"[^\W_]")


def _elements(
    text: str,
    m: re.Match,
    row: Format,
    tools=None,
    fmt: str | None = None,
    limit: int | None = None,
) -> list[Call]:
    """``<function=NAME>`` / ``<invoke name="NAME">`` (``m``, opened by ``row``): its
    ``<parameter>`` elements, or the JSON object inside it. ``fmt``: the format of a frame
    that names its calls.

    A tag the model left out is not needed where the next tag ends what it would have closed
    (parameters and calls do not nest): a value ends at its closing tag, at the next
    ``<parameter``, or at the end of its call; a call ends at its closing tag, at the next
    call, or at the closing tag of what holds it (``limit``: the wrapper's, when it is closed).
    A value that runs to the end of the text has no closing tag; text outside every parameter is
    named, never dropped; a value closed by a tag named after its parameter (``</content>``)
    ends there.
    """
    limit = len(text) if limit is None else limit
    tag = _INVOKE.match(text, m.start())
    ns = tag.group("ns") or ""
    name = next((v for v in tag.group("eq", "dq", "sq", "attr") if v is not None), "").strip()
    close = re.compile("</" + re.escape(ns) + r"(?:function|invoke)>").search(
        text, tag.end(), limit
    )
    # the next call, if it comes before this one's closing tag
    after = _INVOKE.search(text, tag.end(), close.start() if close else limit)
    outer = _OUTER_CLOSE.search(text, tag.end(), limit) if close is None and after is None else None
    closing = close or outer  # the call's own closing tag, else its wrapper's
    if after is not None:
        body_end = end = after.start()
    elif closing is not None:
        body_end, end = closing.span()
    else:
        body_end = end = limit
    complete = after is not None or closing is not None or limit < len(text)
    fmt = fmt or row.name
    at = _skip(text, tag.end())
    if text.startswith("{", at):  # <function=NAME>{...}</function>: the row of a JSON object
        call = _json_args(text, at, body_end, row.name, name, m.start())  # '>' may be left out
        stray = text[call.end : body_end].strip() if call.problem is None else ""
        if _LETTER.search(stray):  # a run of punctuation after the object is no argument
            call = replace(call, problem=f"has text after its arguments ({shown(stray, 40)})")
        return [replace(call, end=end)]
    args, texts, pos = {}, {}, tag.end()
    for _ in range(64):
        p = _PARAM.search(text, pos, body_end)
        stray = _CLOSING_TAGS.sub("", text[pos : p.start() if p else body_end]).strip()
        if stray:
            problem = (
                f"has text outside its parameters ({shown(stray, 40)}), which no parameter holds"
            )
            return [Call(m.start(), end, fmt, name, args, problem, texts=texts)]
        if p is None:
            break
        key = (p.group("eq") or p.group("attr")).strip()
        stop = _PARAM_CLOSE.search(text, p.end(), body_end)
        # the next parameter before this one's closing tag: </parameter> left out
        nxt = _PARAM.search(text, p.end(), stop.start() if stop else body_end)
        raw = text[p.end() : nxt.start() if nxt else stop.start() if stop else body_end]
        raw = re.sub(r"</" + re.escape(key) + r">\s*$", "", raw) if key else raw  # closed by </KEY>
        if key in args:  # the same parameter twice: which value is meant is a guess
            return [Call(m.start(), end, fmt, name, args, f"gives its parameter {key!r} twice")]
        written = p.group("rest") or ""  # a value's type said in its tag: string="true" / "false"
        args[key] = raw.strip() if 'string="true"' in written else _value(raw)
        if "string=" not in written:
            texts[key] = raw.strip()  # no type written: the tool's schema decides (typed)
        if nxt is None and stop is None and not complete:
            problem = f"ends inside its parameter {key!r} (no closing tag)"
            return [Call(m.start(), end, fmt, name, args, problem, texts=texts)]
        pos = nxt.start() if nxt else stop.end() if stop else body_end
    else:
        return [Call(m.start(), end, fmt, name, args, "has more than 64 parameters", texts=texts)]
    problem = None if complete else "has no closing tag"
    return [Call(m.start(), end, fmt, name, args, problem, texts=texts)]


#: What a pairs call's head may be before a ``</arg_key>`` whose opener was left out: its name
#: and first key run together (``send_command_to_shellcommand``), or apart (``browser_action
#: task``).
_PAIRS_HEAD = re.compile("(" + NAME + r")(?:[ \t]+(" + NAME + "))?")
#: The problem of a pairs call whose name runs into its first key: :func:`split_glued` splits it.
GLUED_NAME = "runs its name into its first argument key (<arg_key> missing)"


def _pairs_ahead(prefix: str) -> str:
    """What a frame of key/value pairs starts with: a name, then its first key tag (or one that
    lost its opener), a line break or the frame's end."""
    return (
        r"\s*" + NAME + rf"(?:[ \t]*(?:\n|<{prefix}arg_key>|</tool_call>|$)"
        rf"|[ \t]*[\w.-]*</{prefix}arg_(?:key|value)>)"
    )


def _pairs(
    text: str, start: int, pos: int, body_end: int, end: int, closed: bool, row: Format
) -> list[Call]:
    """``NAME<arg_key>k</arg_key><arg_value>v</arg_value>...``, the row's ``prefix`` before each
    tag name (``<longcat_arg_key>``). Read tag by tag.

    A tag the model left out is not needed where the next tag ends what it would have closed:
    a key ends at ``</arg_key>`` or ``<arg_value>``; a value at ``</arg_value>``, the next
    ``<arg_key>`` or the end of a closed call; a key after a value may come without its
    ``<arg_key>``, a value after its key without its ``<arg_value>`` (vllm#49248). A name that
    runs into its first key (``NAMEkey</arg_key>``, vllm PR#47190) is returned whole, its
    ``problem`` :data:`GLUED_NAME`, its first argument under that whole text:
    :func:`split_glued` splits it where a declared tool's name ends. Text no tag accounts
    for, and a value that runs to the end of the text, are problems, never dropped.
    """

    def call(name, problem=None):
        if problem is None and twice:  # the same argument twice: which value is meant is a guess
            problem = f"gives its argument {twice[0]!r} twice"
        return [Call(start, end, row.name, name, args, problem, texts=texts)]

    def value(key, raw):
        if key in args:
            twice.append(key)
        else:
            args[key], texts[key] = _value(raw), raw.strip()

    twice: list[str] = []
    args: dict = {}
    texts: dict = {}
    name, key, state, at, glued = None, None, "name", pos, False
    tags = re.compile(rf"<(/?){row.prefix}arg_(key|value)>")
    for i, tag in enumerate(tags.finditer(text, pos, body_end)):
        if i >= 256:
            return call(name, "has more than 64 arguments")
        seg, opening, what = text[at : tag.start()], not tag.group(1), tag.group(2)
        blank = not seg.strip()
        at = tag.end()
        if state == "name":
            head = _PAIRS_HEAD.fullmatch(seg.strip())
            # two words are a name and its first key only before a </arg_key> (its opener left out)
            if head is None or head.group(2) and (opening, what) != (False, "key"):
                problem = f"whose name {shown(seg.strip(), 40)} is not a name"
                return call(None, "that names no tool" if blank else problem)
            name = head.group(1)
            if (opening, what) == (False, "key"):
                # <arg_key> left out: NAME key</arg_key>, or NAMEkey</arg_key> (glued)
                key, state, glued = head.group(2) or name, "after key", not head.group(2)
            elif (opening, what) == (True, "key"):
                state = "key"
            elif (opening, what) == (False, "value"):
                # NAME</arg_value>: a stray closing tag, no argument (fw-ai python-sdk#119)
                state = "between"
            else:
                return call(name, f"has {tag.group()} where its first <arg_key> belongs")
        elif state == "key":
            if what == "key" and opening or what == "value" and not opening or not seg.strip():
                key = shown(seg.strip(), 40)
                return call(name, f"has an argument key {key} ended by {tag.group()}")
            key = seg.strip()
            # </arg_key> ends the key; <arg_value> does too when </arg_key> was left out
            state = "after key" if what == "key" else "value"
        elif state == "after key":
            if (opening, what) == (True, "value") and blank:
                state = "value"
            elif not blank and ((opening, what) in ((False, "value"), (True, "key"))):
                # <arg_value> left out (and </arg_value> too, before <arg_key>)
                value(key, seg)
                state = "between" if what == "value" else "key"
            else:
                return call(name, f"has no value for its argument {key!r} before {tag.group()}")
        elif state == "value":
            if what == "value" and opening or what == "key" and not opening:
                return call(name, f"has {tag.group()} inside the value of its argument {key!r}")
            # ended by </arg_value>, or by the next <arg_key> (</arg_value> left out)
            value(key, seg)
            state = "between" if what == "value" else "key"
        else:  # between two arguments
            if (opening, what) == (True, "key") and blank:
                state = "key"
            elif (opening, what) == (False, "key") and not blank:
                key, state = seg.strip(), "after key"  # <arg_key> left out
            elif not (opening, what) == (False, "value") or not blank:
                # text between two arguments (a duplicate </arg_value> is no text)
                stray = shown(seg.strip() or tag.group(), 40)
                return call(name, f"has text outside its arguments ({stray})")
    rest = text[at:body_end].strip()
    if state == "name":
        head = _PAIRS_HEAD.fullmatch(rest)
        if head is None or head.group(2):
            return call(None, "that names no tool")
        return call(head.group(1), None if closed else f"has no closing {row.closes}")
    if state == "between" and rest:
        return call(name, f"has text outside its arguments ({shown(rest, 40)})")
    if state in ("value", "after key") and closed and (rest or state == "value"):
        value(key, rest)  # the value ends where the call does
    elif state != "between":
        what = f"inside its argument {key!r}" if key is not None else "inside an argument key"
        return call(
            name, f"ends {what} (no closing tag)" if not closed else f"has no value for {key!r}"
        )
    if glued:  # the name and the first key run together: split_glued splits them
        return call(name, GLUED_NAME)
    return call(name, None if closed else f"has no closing {row.closes}")


def split_glued(call: Call, tools) -> Call:
    """A pairs call whose name ran into its first key (:data:`GLUED_NAME`), split.

    It is split where a declared tool's name ends.

    ``tools``: the declared tool names, or a dict of each name to its declared parameters
    (then the rest must be one of them). Split only when exactly one declared tool fits;
    otherwise (or with no ``tools``) the call keeps its problem, which now says that the text
    is not a tool (and which tools it could start with). Any other call is returned as it is.
    """
    if call.problem != GLUED_NAME:
        return call
    glued = call.name
    fits = [
        t
        for t in tools or ()
        if isinstance(t, str)
        and glued.startswith(t)
        and len(glued) > len(t)
        and (not isinstance(tools, dict) or glued[len(t) :] in tools[t])
    ]
    if len(fits) == 1:
        key = glued[len(fits[0]) :]
        return replace(
            call,
            name=fits[0],
            problem=None,
            arguments={(key if k == glued else k): v for k, v in call.arguments.items()},
            texts={(key if k == glued else k): v for k, v in (call.texts or {}).items()},
        )
    could = f" (it could start with {' or '.join(fits)})" if fits else ""
    return replace(call, problem=f"{GLUED_NAME}: {shown(glued, 60)} is not a tool{could}")


def typed(call: Call, tools) -> Call:
    """A call whose values are text (:attr:`Call.texts`), each read by its declared type.

    A parameter the tool declares as a string keeps the text as written, so
    ``<parameter=invoice_id>2041</parameter>`` is ``"2041"`` and ``true`` stays ``"true"``;
    one declared as another type (a number, a boolean, an object) is read as JSON, as is
    one whose type is not known (JSON when it is JSON, else text: :func:`_value`). ``tools``:
    each declared name mapped to its parameters' schemas (``{"find_invoice": {"invoice_id":
    {"type": "string"}}}``); names alone, or parameters without schemas, declare no type.
    Any other call is returned as it is.
    """
    if not call.texts or not isinstance(call.arguments, dict):
        return call
    params = tools.get(call.name) if isinstance(tools, dict) else None
    if not isinstance(params, dict):
        return call
    arguments = dict(call.arguments)
    for key, text in call.texts.items():
        schema = params.get(key)
        kind = schema.get("type") if isinstance(schema, dict) else None
        if kind == "string" or (isinstance(kind, list) and "string" in kind):
            arguments[key] = text
    return replace(call, arguments=arguments)


def fitted(call: Call, tools) -> Call:
    """A call fitted to the declared ``tools``: a glued name split (:func:`split_glued`),
    values written as text read by their declared types (:func:`typed`)."""
    return typed(split_glued(call, tools), tools)


# --------------------------------------------------------------------------- frames, Python calls

_JSON_AHEAD = re.compile(r"\[?\s*\{|```")


def _wrapped(text: str, m: re.Match, row: Format, tools=None) -> list[Call]:
    """A frame (``row``): the elements, JSON, key/value pairs or Python-style calls inside it.

    Each call read spans the frame around it.
    """
    pos = _skip(text, m.end())
    close = re.compile(row.closes).search(text, pos)
    end, closed = (close.end(), True) if close else (len(text), False)
    body_end = close.start() if close else len(text)
    tags = _union(shape="elements")
    inner = tags.match(text, pos)
    if inner is not None:
        fmt = row.name if row.names_calls else None
        calls, more = [], inner
        while more is not None and len(calls) < MAX_FRAMES:  # parallel calls inside one frame
            calls += _elements(text, more, _row(more), fmt=fmt, limit=body_end)
            more = tags.search(text, calls[-1].end, body_end)
        return [replace(c, start=m.start(), end=max(c.end, end)) for c in calls]
    if row.shape == "pairs":
        return _pairs(text, m.start(), pos, body_end, end, closed, row)
    if _JSON_AHEAD.match(text, pos) or row.shape in ("json", "keyed"):
        calls = _json_frame(text, m.start(), pos, body_end, row.name, keyed=row.shape == "keyed")
        return [replace(c, end=max(c.end, end)) for c in calls]
    calls = python_calls(text[pos:body_end])
    if calls:
        return [Call(m.start(), end, row.name, name, args) for name, args in calls]
    code = row.shape == "code" and text[pos:body_end].strip()
    if not code:
        return [_nameless(text, m.start(), pos, end, row.name)]
    problem = "that holds code for a built-in interpreter, not a call"
    return [Call(m.start(), end, row.name, None, code, problem)]


_CHILD = re.compile(r"\s*<([A-Za-z_][\w.-]{0,100})>(.*?)</\1>", re.DOTALL)


def _element(text: str, m: re.Match, row: Format, tools=None) -> list[Call]:
    """``<NAME><key>value</key>...</NAME>``: an XML element named after a declared tool, a child
    element per argument, each value text (:func:`typed` reads it by its declared type)."""
    name = m.group("tag")
    close = text.find(f"</{name}>", m.end())
    body_end, end = (close, close + len(name) + 3) if close >= 0 else (len(text), len(text))
    args: dict = {}
    texts: dict = {}
    pos = m.end()
    for _ in range(64):
        child = _CHILD.match(text, pos, body_end)
        if child is None:
            break
        key, raw = child.groups()
        if key in args:  # the same argument twice: which value is meant is a guess
            return [Call(m.start(), end, row.name, name, args, f"gives its argument {key!r} twice")]
        args[key], texts[key] = _value(raw), raw.strip()
        pos = child.end()
    stray = text[pos:body_end].strip()
    problem = f"has text outside its arguments ({shown(stray, 40)})" if stray else None
    problem = problem or (None if close >= 0 else f"has no closing tag </{name}>")
    return [Call(m.start(), end, row.name, name, args, problem, texts=texts)]


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Format:
    """One vendor's call markup: a row of :data:`FORMATS`.

    ``opens``: where a call begins, a regex (a row that reads only a declared tool's call
    matches the name itself); ``closes``: the token that ends a frame, a regex; ``shape``: how
    the tool's name and its arguments are written, which names the reader (:data:`_SHAPES`): a
    frame holding JSON (``json``, ``keyed`` when the tool is the object's key, ``mixed`` when it
    may also hold elements or Python-style calls, ``code`` when it may hold code), key/value
    ``pairs``, a header and a JSON object (``named``, ``section``), a call's tag and its
    ``elements``, ``channels``, ...; ``values``: how a value written as text is typed
    (``schema``: by the declared type, and without one JSON when it is JSON; ``json``: as
    JSON); ``entities``: its values are XML-escaped (``&amp;``, ``&lt;``, ``&#39;``), so each is
    decoded once -- in any other format an entity reaches the argument check, which refuses
    it; ``channels``: the vendor's channel names, never a tool's; ``head``: how the header names
    the tool, a regex whose group ``name`` is the name (a ``section`` header that leaves it
    out gives the name after the separator); ``sep``: the token between a section call's
    header and its arguments, which tells whose the call is; ``names_calls``: the frame's name
    is the calls' format (the elements inside are written the vendor's way); ``prefix``: what
    the pairs' tag names start with; ``quote``: what a string stands between, in a ``glued``
    object; ``declared``: the markup is the name of a declared tool itself (``opens`` holds
    ``{names}``), read only with the tools and only as the whole reply.
    """

    name: str
    opens: str
    closes: str = ""
    shape: str = "mixed"
    values: str = "json"
    entities: bool = False
    channels: tuple[str, ...] = ()
    head: str = r"\s*(?P<name>" + NAME + ")"
    sep: str = ""
    names_calls: bool = False
    prefix: str = ""
    quote: str = ""
    declared: bool = False


def _spelled_with(characters: str) -> str:
    """A regex that a special token ahead holds one of ``characters`` (how a vendor spells it)."""
    return f"(?=<[^<>]{{0,40}}[{characters}])"


_BEGIN, _END, _SEP = (_token(words) for words in ("tool call begin", "tool call end", "tool sep"))
_ELEMENTS_AHEAD = r"(?=\s*<" + _PREFIX + r"?invoke\b)"
_SECTION = f"(?:{_token('tool calls begin')}|{_token('tool calls section begin')})"
_GLUED_HEAD = r"\s*call:(?P<name>" + NAME + ")"
_ANY_PREFIX = "<" + _PREFIX + "?"
_ATTR = _anonymous(_NAME_ATTR)

#: Every vendor's call markup the readers know, a row each (sources: the module's); the first
#: row that opens at a place reads there.
FORMATS = (
    Format(
        "Harmony",
        r"<\|channel\|>|<\|start\|>assistant",
        r"<\|call\|>",
        "channels",
        channels=("analysis", "commentary", "final"),
    ),
    # one call of a section: DeepSeek's function<｜tool▁sep｜> then Step-3's elements, NAME and
    # fenced JSON (V3, R1), or NAME<｜tool▁sep｜>{...} (V3.1); Kimi K2's header is functions.NAME:0
    Format(
        "Step-3",
        _BEGIN + rf"(?=\s*function\s*{_SEP}{_ELEMENTS_AHEAD})",
        _END,
        "section",
        head="function",
        sep=_SEP + _ELEMENTS_AHEAD,
        names_calls=True,
    ),
    Format(
        "DeepSeek",
        _spelled_with("▁｜") + _BEGIN,
        _END,
        "section",
        head="function|(?P<name>.*)",
        sep=_SEP,
    ),
    Format(
        "Kimi K2",
        _BEGIN,
        _END,
        "section",
        head=r"(?:functions\.)?(?P<name>[^:]*)(?::.*)?",
        sep=_token("tool call argument begin"),
    ),
    Format("DeepSeek", _spelled_with("▁") + _SECTION, _token("tool calls end"), "sections"),
    Format("Kimi K2", _SECTION, _token("tool calls section end"), "sections"),
    Format(
        "Gemma",
        r"<\|tool_call>",
        r"<tool_call\|>",
        "glued",
        channels=("thought",),
        head=_GLUED_HEAD,
        quote='<|"|>',
    ),
    Format(
        "FunctionGemma",
        r"<start_function_call>",
        r"<end_function_call>",
        "glued",
        head=_GLUED_HEAD,
        quote="<escape>",
    ),
    # [TOOL_CALLS]NAME{...} (v11+), NAME[CALL_ID]id[ARGS]{...}, or a JSON list (before v11)
    Format(
        "Mistral",
        r"\[TOOL_CALLS\]",
        shape="named",
        head=r"\s*(?P<name>" + NAME + r")(?:\[CALL_ID\][\w-]*)?(?:\[ARGS\])?",
    ),
    # a call's tag holding a JSON object, or its arguments as <parameter> elements
    Format("Llama 3.1", _anonymous(_INVOKE.pattern) + r"(?=\s*\{)", "</function>", "elements"),
    Format(
        "Qwen3-Coder", _ANY_PREFIX + _anonymous(_FUNCTION_EQ), "</function>", "elements", "schema"
    ),
    Format(
        "DeepSeek DSML",
        r"<[|｜]DSML[|｜]" + _ATTR,
        r"</[|｜]DSML[|｜]invoke>",
        "elements",
        "schema",
    ),
    Format("Step-3", "<steptml:" + _ATTR, "</steptml:invoke>", "elements", "schema"),
    Format("MiniMax", "<minimax:" + _ATTR, "</minimax:invoke>", "elements", "schema"),
    Format("XML invoke", _ANY_PREFIX + _ATTR, "</invoke>", "elements", "schema"),
    Format("GLM", r"<tool_call>(?=" + _pairs_ahead("") + ")", "</tool_call>", "pairs", "schema"),
    Format("Hermes", r"<tool_call>", "</tool_call>"),
    Format("Granite", r"<\|tool_call\|>", r"<\|end_of_text\|>"),
    Format("Nemotron", r"<TOOLCALL>", "</TOOLCALL>"),
    Format("Jamba", r"<tool_calls>", "</tool_calls>"),
    Format("Phi-4", r"functools(?=\s*\[)", "\n\n", "json"),
    Format("Command R", r"<\|START_ACTION\|>", r"<\|END_ACTION\|>"),
    Format("Apertus", r"<\|tools_prefix\|>", r"<\|tools_suffix\|>", "keyed"),
    Format("LM Studio", r"\[TOOL_REQUEST\]", r"\[END_TOOL_REQUEST\]"),
    Format("Llama 3", r"<\|python_tag\|>", r"<\|eom_id\|>", "code"),
    Format("LFM2", r"<\|tool_call_start\|>", r"<\|tool_call_end\|>"),
    Format("Olmo 3", r"<function_calls>", "</function_calls>"),
    Format("Seed-OSS", r"<seed:tool_call>", "</seed:tool_call>", names_calls=True),
    Format("MiniMax", r"<minimax:tool_call>", "</minimax:tool_call>", names_calls=True),
    Format(
        "LongCat",
        r"<longcat_tool_call>",
        "</longcat_tool_call>",
        "pairs",
        "schema",
        prefix="longcat_",
    ),
    Format("DeepSeek DSML", r"<｜DSML｜function_calls>", "</｜DSML｜function_calls>"),
    Format("Llama 4", r"<\|python_start\|>", r"<\|python_end\|>"),
    Format("Gemma 3", r"```(?:tool_code|tool_call|python_tool_code)[ \t]*\n", "```"),
    Format("Functionary", r"(?m:^)>>>(?=[ \t]*" + NAME + r"[ \t]*\n[ \t]*\{)", shape="named"),
    # a recipient whose special tokens were stripped: to=functions.NAME json{...}
    Format(
        "Harmony",
        r"to=functions\.(?=[^\W\d])",
        shape="named",
        head=r"(?P<name>[^\s<{]+)[ \t]*(?:<\|constrain\|>)?[ \t]*(?:json|code)?[ \t]*"
        r"(?:<\|message\|>)?",
    ),
    # a declared tool's name alone on the first line, then its JSON object (GLM-4-0414's
    # template has no call markers: ml-explore/mlx-swift-lm#491)
    Format("GLM-4-0414", r"\A\s*(?=(?:{names})[ \t]*\n[ \t]*\{)", shape="named", declared=True),
    # an XML element named after a declared tool, a child element per argument (Cline, Roo Code)
    Format(
        "XML element",
        r"<(?P<tag>{names})>",
        shape="element",
        values="schema",
        entities=True,
        declared=True,
    ),
)
#: Each vendor's channel names: a call to one names no tool (its recipient was lost).
CHANNELS = {c: row.name for row in FORMATS for c in row.channels}

#: The reader of each shape: ``(text, the opening match, its row, tools) -> calls``.
_SHAPES: dict[str, Callable[..., list[Call]]] = {
    "channels": _channels,
    "section": _section,
    "sections": _sections,
    "glued": _glued,
    "named": _named,
    "elements": _elements,
    "element": _element,
    **dict.fromkeys(("mixed", "json", "keyed", "code", "pairs"), _wrapped),
}


@lru_cache(maxsize=64)
def _union(column: str = "opens", names: tuple[str, ...] | None = None, shape: str | None = None):
    """One regex of the rows' ``column``, a named group a row (:func:`_row`): every row that has
    one, or those of one ``shape``; ``names``: the declared tools (None: none, and the rows of a
    declared tool's name are left out)."""
    declared = "|".join(map(re.escape, names or ()))
    rows = [
        f"(?P<f{i}>{getattr(row, column).replace('{names}', declared)})"
        for i, row in enumerate(FORMATS)
        if getattr(row, column) and (names or not row.declared) and shape in (None, row.shape)
    ]
    return re.compile("|".join(rows))


def _row(m: re.Match) -> Format:
    return FORMATS[int(m.lastgroup[1:])]


@lru_cache(maxsize=1)
def _section_stops() -> re.Pattern:
    """What ends a section's call: its closing token (group ``end``), the next call's opening,
    or the section's closing token."""
    calls = [row for row in FORMATS if row.shape == "section"]
    ends = [row.closes for row in FORMATS if row.shape == "sections"]
    stops = "|".join([row.opens for row in calls] + ends)
    return re.compile("(?P<end>" + "|".join(row.closes for row in calls) + ")|" + stops)


def find_calls(text: str, limit: int = MAX_FRAMES, tools=None) -> list[Call]:
    """Every call written in native markup in ``text``, in order, at most ``limit``.

    A frame that names no tool, has no closing tag, or holds arguments that are not an object
    is still returned, its ``problem`` saying so (``"ends before its arguments"``), so
    callers can tell the model what it wrote. ``tools``: the declared names (or each mapped
    to its parameters), which the rows that are a declared tool's name read. Linear in
    ``len(text)``; never raises.
    """
    names = tuple(t for t in tools or () if isinstance(t, str) and t) or None
    openers, calls, pos = _union(names=names), [], 0
    for _ in range(MAX_FRAMES):
        m = openers.search(text, pos)
        if m is None or len(calls) >= limit:
            break
        row = _row(m)
        found = _SHAPES[row.shape](text, m, row, tools)
        calls += [_unescaped(c) for c in found] if row.entities else found
        pos = max([m.end()] + [c.end for c in found])
    return calls[:limit]


def _unescaped(call: Call) -> Call:
    """A call whose format XML-escapes its values, each value decoded once (``&amp;`` is ``&``)."""
    if not isinstance(call.arguments, dict):
        return call
    args = {k: html.unescape(v) if isinstance(v, str) else v for k, v in call.arguments.items()}
    texts = {k: html.unescape(v) for k, v in (call.texts or {}).items()}
    return replace(call, arguments=args, texts=texts)
