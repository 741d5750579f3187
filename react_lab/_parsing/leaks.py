"""Tool calls that leaked into a native reply's text.

A native reply carries its calls in ``tool_calls``. When a server's chat template does
not know the model's call format, or a model writes the call its own way, the call
arrives as ordinary text in ``content`` with no ``tool_calls`` and ``finish_reason:
"stop"``: in the model's own markup -- Harmony's ``to=functions.NAME<|message|>{...}``,
DeepSeek's ``<｜tool▁call▁begin｜>``, Mistral's ``[TOOL_CALLS]NAME{...}``, Gemma's
``<|tool_call>call:NAME{...}``, a ``<tool_call>`` block (Hermes, Qwen, GLM), Qwen3-Coder's
``<function=NAME>`` elements, and more (:mod:`react_lab._parsing.formats` lists them) -- or as a
bare JSON call: ``{"name": ..., "arguments": {...}}`` (Llama 3), ``{"tool_name": ...,
"tool_input": {...}}``, a JSON list of calls, any of them in a fenced ``json`` block.
Taken as the final answer, such a reply ends the run on a tool call nobody ran.

:func:`find_leaks` finds them with the text parser's own readers (the markup readers of
:mod:`react_lab._parsing.formats`, the JSON-call reader :func:`react_lab._parsing.calls.find_json_call`).
What the native loop does with them is its policy (:func:`react_lab.native.run_native`):
a leaked call that names a declared tool with valid arguments is run and the step is
marked ``leaked``; otherwise nothing runs and the model is told to put the call in the
tool-call field.

The text parser (:func:`react_lab.parser.parse`) reads calls outside their place with
the same readers: markup (:func:`markup_call`, never taken for an answer), a line that is
only a call (:func:`bare_call`), a name glued to its object (:func:`glued_call`). Text
whose tokens were joined without decoding (``▁`` for a space) is decoded first by
:func:`decode_markers`. Both set reasoning aside first (:func:`set_aside_reasoning`:
``<think>...</think>``, Harmony's analysis channel), and neither takes text holding a piece
of call markup or a special token (:data:`MARKUP_PIECE`) as an answer
(:func:`react_lab.parser.read_reply` is the native loop's reading of a reply's text).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .calls import (
    find_json_call,
    is_tool_name,
    load_object,
    names_a_call,
    paren_call,
    python_calls,
    unwrap,
)
from .formats import GLUED_NAME, find_calls, relaxed_object, split_glued
from ..protocol import ParseResult, clip, shown

#: Most calls read from one reply: a list of calls is rarely longer, and it bounds the work.
MAX_CALLS = 8


@dataclass(frozen=True)
class Leak:
    """One leaked call: OpenAI-shaped ``call``, the ``format`` it was written in, its span in the text."""

    call: dict
    format: str
    start: int
    end: int
    problem: str | None = None

    def describe(self, tools=None) -> str:
        """The call in words for a message to the model: ``"a Harmony tool call to get_weather"``.

        With ``tools`` (the declared names), a call to another tool says so ("..., a tool this
        agent does not have"), and a call with a problem says what it is ("... that is cut off
        inside its parameter 'city'").
        """
        name = self.call["function"]["name"]
        said = f"a {self.format} tool call to {clip(name, 60)}"
        if self.problem is not None:
            return f"{said} that {self.problem}"
        return f"{said}, a tool this agent does not have" if tools is not None and name not in tools else said


def leaked_calls(text: str | None, tools=None) -> list[dict]:
    """Find tool calls written in a reply's text; return them OpenAI-shaped, or [] if none.

    Each call is ``{"id": "leaked_N", "type": "function", "function": {"name",
    "arguments": "<JSON string>"}}``, in the order written (every call of a list or a
    frame). The format each was written in is :func:`find_leaks`' ``format``; ``tools`` as
    there. Never raises.
    """
    return [leak.call for leak in find_leaks(text, tools)]


def find_leaks(text: str | None, tools=None) -> list[Leak]:
    """Every tool call written in ``text``, with its format, in order; [] if none. Never raises.

    Markup that names a tool counts even when its arguments cannot be read (they are then
    passed on as written, so the argument check refuses them with a reason). A bare JSON
    object counts only when it is unmistakably a call (:func:`react_lab._parsing.calls.names_a_call`:
    an input key such as ``arguments``/``tool_input``, or a name key other than ``name``),
    so ``{"name": "Acme Corp"}`` in an answer is not one. Text whose spaces are still
    tokenizer markers (``▁``) is decoded first. ``tools`` (the declared names, or each name
    mapped to its parameters) splits a GLM name run into its first key where a declared tool
    ends (:func:`react_lab._parsing.formats.split_glued`); a name no tool splits stays whole, refused.
    """
    if not text or not isinstance(text, str):
        return []
    try:
        text = decode_markers(text)[0]
        calls = [split_glued(c, tools) for c in find_calls(text, MAX_CALLS) if c.name and c.answer is None]
        found = [(c.start, c.end, c.format, c.name, c.arguments, c.problem) for c in calls]
        found += _bare_json_calls(text, [(c[0], c[1]) for c in found])
        found.sort(key=lambda c: c[0])
        return [Leak({"id": f"leaked_{i}", "type": "function",
                      "function": {"name": name.strip(), "arguments": _arguments(args, problem)}},
                     fmt, start, end, problem)
                for i, (start, end, fmt, name, args, problem) in enumerate(found[:MAX_CALLS], 1)]
    except Exception:  # noqa: BLE001 -- reading model text must never take the loop down
        return []


def _bare_json_calls(text: str, taken: list[tuple[int, int]]) -> list[tuple]:
    """JSON calls outside the markup spans ``taken``, as ``(start, end, "JSON", name, input, None)``."""
    found: list[tuple] = []
    pos = 0
    while len(found) + len(taken) < MAX_CALLS:
        hit = find_json_call(text, pos)
        if hit is None or hit[2].kind != "action":
            break
        start, end, result = hit
        inside = any(a <= start < b for a, b in taken)
        if not inside and names_a_call(load_object(text[start:end])):
            found.append((start, end, "JSON", result.tool, result.input, None))
        pos = end
    return found


def _arguments(args, problem: str | None) -> str:
    """A call's arguments as the JSON string the tool-call field holds.

    Text that looks like an object is passed on as written. A call with a problem (cut off,
    unreadable) is passed on as written too: its text, or what was read with the object left
    unclosed, so the argument check refuses it and nothing runs on half a call.
    """
    if isinstance(args, str) and (problem or args.strip().startswith("{")):
        return args
    if problem:
        return json.dumps(args, ensure_ascii=False)[:-1] if isinstance(args, dict) else '""'
    return json.dumps("" if args is None else args, ensure_ascii=False)


# --------------------------------------------------------------------------- for the text parser

def markup_call(text: str, tools=None) -> tuple[int, int, ParseResult, str | None] | None:
    """The first call written in native markup, as :func:`react_lab.parser.parse` reads it.

    Returns ``(start, end, result, thought)``: an action (its ``reason`` names the format,
    for the message if the tool is unknown), a final answer (Harmony's final channel), or
    an error naming the format and what is wrong ("a DeepSeek tool call to search is cut
    off before its arguments"); ``thought`` is reasoning the markup carries. None if none.
    ``tools``: the declared names, as :func:`find_leaks` takes them.
    """
    call = next(iter(find_calls(text, limit=1)), None)
    if call is None:
        return None
    call = split_glued(call, tools)
    dialect = re.sub(r"\W+", "_", call.format.lower()).strip("_")
    if call.answer is not None:
        result = ParseResult("final", answer=call.answer.strip(), dialect=dialect)
    elif call.name is None:
        result = ParseResult("error", dialect=dialect, reason=(
            f"found {call.format} tool-call markup {call.problem or 'that names no tool'}, which this "
            "protocol does not run; write 'Action: tool_name[arguments]'"))
    elif call.problem is not None:
        name = clip(call.name, 60) if is_tool_name(call.name) else "tool_name"  # a header may hold any text
        name = "tool_name" if call.problem.startswith(GLUED_NAME) else name  # no tool of that name
        result = ParseResult("error", tool=call.name, dialect=dialect, reason=(
            f"a {call.format} tool call to {shown(call.name, 60)} {call.problem}; write the whole call "
            f"again as 'Action: {name}[arguments]'"))
    else:
        result = ParseResult("action", tool=call.name, input=call.arguments, dialect=dialect,
                             reason=f"a {call.format} tool call")
    return call.start, call.end, result, call.thought


#: A name glued to the object of its arguments: ``search{"query": "x"}`` (``{`` not matched).
GLUED = re.compile(r"[ \t`*]*([^\W\d][\w.-]*)(?=\{)")
_BARE_CALL = re.compile(r"^[ \t>*`]*(\[[ \t]*)?([^\W\d][\w.]*)[ \t]*([({])", re.MULTILINE)
_LINE_TAIL = re.compile(r"[ \t`*;\]]*(?:\n|$)")


def glued_call(text: str, m: re.Match) -> tuple[int, int, ParseResult]:
    """``NAME{...}`` (``m`` from :data:`GLUED`) as ``(start, end, result)``: bare keys and JSON values read."""
    name, brace = m.group(1), m.end()
    value = relaxed_object(text, brace)
    if value is None:
        short = clip(name, 40)
        line_end = text.find("\n", brace)
        return (m.start(1), len(text) if line_end < 0 else line_end, ParseResult(
            "error", tool=name, dialect="glued", reason=(
                f"a call written as {short}{{...}} whose arguments cannot be read; write "
                f"'Action: {short}[arguments]' or 'Action: {short}({{\"key\": \"value\"}})'")))
    return m.start(1), value[1], ParseResult("action", tool=name, input=unwrap(value[0]), dialect="glued")


def bare_call(text: str) -> tuple[int, int, ParseResult] | None:
    """The first line that is only a call, as ``(start, end, result)``: ``search("x")``,
    ``[search(query="x")]`` (a Python-style list: its first call), ``search{"query": "x"}``.

    The text parser's last resort, for a completion with no label: prose that mentions
    ``f(x)`` mid-line is not a call. The first 16 such lines are tried.
    """
    for i, m in enumerate(_BARE_CALL.finditer(text)):
        if i >= 16:
            break
        line_end = text.find("\n", m.start())
        line_end = len(text) if line_end < 0 else line_end
        if m.group(1):  # [a(k=1), b()]
            calls = python_calls(text[m.start():line_end].strip(" \t>*"))
            if calls:
                return m.start(), line_end, ParseResult("action", tool=calls[0][0], input=calls[0][1],
                                                        dialect="call")
            continue
        if m.group(3) == "(":
            call = paren_call(text, m.start(2), line_end)
            closed = call is not None and text[call[1] - 1] == ")"
        else:
            glued = GLUED.match(text, m.start(2))  # None for "name {": a space is prose, not a glued call
            call = glued_call(text, glued) if glued else None
            closed = call is not None and (call[2].kind == "error" or text[call[1] - 1] == "}")
        if call is not None and closed and _LINE_TAIL.match(text, call[1]):
            return call
    return None


# --------------------------------------------------------------------------- tokenizer markers

_SPECIAL = re.compile(r"<[|｜][^<>\n]{1,60}?[|｜]>")
_BYTE_TOKEN = re.compile(r"(?:<0x[0-9A-Fa-f]{2}>)+")


def _byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-level alphabet: the character each byte is written as, mapped back to the byte."""
    keep = [*range(33, 127), *range(161, 173), *range(174, 256)]
    moved = [b for b in range(256) if b not in keep]
    return {**{chr(b): b for b in keep}, **{chr(256 + i): b for i, b in enumerate(moved)}}


_BYTE_OF = _byte_alphabet()


def decode_markers(text: str) -> tuple[str, str | None]:
    """Text whose tokens were joined without decoding, decoded; and the marker that was there, or None.

    SentencePiece writes a space as ``▁`` (U+2581) and unknown bytes as ``<0x0A>``;
    byte-level BPE (GPT-2, Llama 3, Qwen) writes a space as ``Ġ`` (U+0120) and a line
    break as ``Ċ`` (U+010A). A text counts as undecoded when its markers outnumber its
    spaces (``▁`` inside special tokens such as ``<｜tool▁sep｜>`` is not counted or changed).
    """
    plain = _SPECIAL.sub("", text)
    if plain.count("\u2581") > plain.count(" "):
        parts = _SPECIAL.split(text)
        tokens = _SPECIAL.findall(text)
        out = [_bytes_back(p.replace("\u2581", " ")) for p in parts]
        joined = "".join(o + (tokens[i] if i < len(tokens) else "") for i, o in enumerate(out))
        return joined.lstrip(" ") if text.startswith("\u2581") else joined, "U+2581"
    if ("\u0120" in text or "\u010a" in text) and " " not in text and "\n" not in text \
            and all(c in _BYTE_OF for c in text):
        return bytes(_BYTE_OF[c] for c in text).decode("utf-8", errors="replace"), "U+0120"
    return text, None


def _bytes_back(text: str) -> str:
    """SentencePiece byte tokens (``<0xE2><0x82><0xAC>``) as the characters they encode."""
    return _BYTE_TOKEN.sub(lambda m: bytes(int(h, 16) for h in re.findall(r"[0-9A-Fa-f]{2}", m.group()))
                           .decode("utf-8", errors="replace"), text)


#: End-of-turn tokens a server may leave at the end of an answer, and the tokens that start the next turn.
_END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<|return|>", "<|endoftext|>", "</s>",
               "<end_of_turn>", "<turn|>", "<\uff5cend\u2581of\u2581sentence\uff5c>",
               "<|im_start|>", "<|start_header_id|>", "<start_of_turn>", "<|start|>")


def without_end_tokens(answer: str) -> str:
    """``answer`` up to its first end-of-turn token: the turn ended there, and what follows is
    the next turn's (``"42<|im_end|>\n<|im_start|>user"`` is ``"42"``)."""
    cut = min((i for i in (answer.find(token) for token in _END_TOKENS) if i >= 0), default=len(answer))
    return answer[:cut].rstrip()


_BRACKET = re.compile(r"[\[\]]")


def bracket_call(text: str, start: int, line_end: int):
    """The paper's call ``name[args]`` on ``text[start:line_end]``: (name, args, end), brackets balanced; or None.

    ``name`` is everything before the first ``[``; it must not be blank or hold ``]``, ``{`` or ``}``.
    """
    open_at = text.find("[", start, line_end)
    if open_at < 0:
        return None
    name = text[start:open_at]
    if not name.strip() or any(ch in name for ch in "]{}"):
        return None
    name = name.strip(" \t").strip("`*\"' ")
    depth = 0
    for b in _BRACKET.finditer(text, open_at, line_end):
        depth += 1 if b.group() == "[" else -1
        if depth == 0:
            return name, text[open_at + 1:b.start()], b.end()
    # Never closed on this line: the model was cut off mid-call; take the rest of the line.
    return name, text[open_at + 1:line_end], line_end


# --------------------------------------------------------------------------- reasoning, and what no answer holds

#: Reasoning tags and their closing tags: Qwen3, DeepSeek R1 and most open reasoning models
#: (``<think>``), Claude-style prompts (``<thinking>``), Seed-OSS, Magistral, Kimi-VL.
_REASONING = {"<think>": "</think>", "<thinking>": "</thinking>", "<seed:think>": "</seed:think>",
              "[THINK]": "[/THINK]", "\u25c1think\u25b7": "\u25c1/think\u25b7"}
#: A reasoning tag, open or close, or the header of a Harmony message on the analysis channel.
_REASONING_TAG = re.compile("|".join(re.escape(t) for t in [*_REASONING, *_REASONING.values()])
                            + r"|(?P<analysis>(?:<\|start\|>[ \t]*assistant[ \t]*)?<\|channel\|>[ \t]*analysis\b"
                            r"[^<\n]{0,100}<\|message\|>)")
_ANALYSIS_END = re.compile(r"<\|end\|>|(?=<\|start\|>|<\|channel\|>)")


def set_aside_reasoning(text: str) -> tuple[str, str | None, str | None]:
    """``text`` without its reasoning blocks; what they held; and what they were, in words.

    A reasoning block is the text between reasoning tags (``<think>...</think>`` and the
    others of :data:`_REASONING`) or a Harmony message on the analysis channel
    (``<|channel|>analysis<|message|>...<|end|>``). A closing tag whose opener is not in
    the text (a chat template that writes ``<think>`` into the prompt) closes a block that
    began where the text did, or after the block before it; an opener never closed opens one
    that runs to the end. What is in a block is a draft: never an action, never an answer.
    Returns ``(text, None, None)`` when there is none, the text unchanged. The words say what
    was set aside (``"a reasoning block (<think>...</think>)"``, ``"a reasoning block opened
    with <think> and never closed"``, ``"Harmony's analysis channel"``). Linear; never raises.
    """
    kept, drafts, kinds, pos = [], [], [], 0
    for _ in range(1000):
        m = _REASONING_TAG.search(text, pos)
        if m is None:
            break
        kept.append(text[pos:m.start()] if m.group() in _REASONING or m.group("analysis") else "")
        if m.group("analysis"):
            end = _ANALYSIS_END.search(text, m.end())
            drafts.append(text[m.end():end.start() if end else len(text)])
            kinds.append("Harmony's analysis channel")
            pos = end.end() if end else len(text)
        elif m.group() in _REASONING:
            close = text.find(_REASONING[m.group()], m.end())
            drafts.append(text[m.end():close if close >= 0 else len(text)])
            kinds.append(f"a reasoning block ({m.group()}...{_REASONING[m.group()]})" if close >= 0
                         else f"a reasoning block opened with {m.group()} and never closed")
            pos = close + len(_REASONING[m.group()]) if close >= 0 else len(text)
        else:  # a closing tag with no opener: the block ran from the start (or the last block) to here
            drafts.append(text[pos:m.start()])
            kinds.append(f"a reasoning block closed by {m.group()} (its opener not written)")
            pos = m.end()
    if not kinds:
        return text, None, None
    kept.append(text[pos:])
    reasoning = "\n".join(d.strip() for d in drafts if d.strip()) or None
    return "".join(kept).lstrip(), reasoning, ", ".join(dict.fromkeys(kinds))


#: A piece of call markup or a special token: what no answer ever holds. Every frame the markup
#: readers know (:mod:`react_lab._parsing.formats`), reasoning tags, and any ``<|...|>`` token.
MARKUP_PIECE = re.compile(
    r"<[|\uff5c][^<>\n]{0,60}?[|\uff5c]>|<\|[\w\"]{1,40}>|<[\w\"]{1,40}\|>"      # <|im_end|>, <|tool_call>, <tool_call|>
    r"|</?(?:[|\uff5c]DSML[|\uff5c])?(?:tool_calls?|function_calls|TOOLCALL|arg_key|arg_value|think|thinking|escape|longcat_tool_call"
    r"|start_function_call|end_function_call|(?:seed|minimax):(?:tool_call|think))>"
    r"|</?(?:[|\uff5c]DSML[|\uff5c]|[A-Za-z]\w*:)?(?:function|invoke|parameter)\b[^<>\n]{0,100}>"  # <function=x>
    r"|\[(?:TOOL_CALLS|ARGS|CALL_ID|TOOL_REQUEST|END_TOOL_REQUEST|/?THINK)\]|\u25c1/?think\u25b7"
    r"|```(?:tool_code|tool_call|python_tool_code)|to=functions\.|functools[ \t]*\["
    r"|</s>|<(?:end|start)_of_turn>")                                              # end-of-turn tokens


def markup_piece(text: str) -> str | None:
    """The first piece of call markup or special token in ``text`` (:data:`MARKUP_PIECE`), or None."""
    m = MARKUP_PIECE.search(text) if isinstance(text, str) else None
    return m.group() if m else None
