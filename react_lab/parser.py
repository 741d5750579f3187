"""The tolerant parser: read real model text into an action, an answer or an error.

:func:`react_lab.protocol.strict_parse` is the classic loop's regex and fails on the
first drift. Real completions drift: numbered labels (``Action 2:``), markdown, an
``Action Input:`` line, a JSON blob, a cut-off stop word, an ``Observation`` the
model wrote itself. :func:`parse` reads all of them and never raises; the loop uses it.

More pieces read model text the same way: :func:`find_forged` finds the first
model-written ``Observation`` line (:func:`settled_forgery` as soon as a completion being
streamed has one for certain), and :func:`truncate_forged` cuts a completion there, as a
stop sequence would have (the parser keeps only that part, and so can a client whose
provider rejects ``stop``). The machinery below them -- label regexes that never
backtrack far -- is not needed to follow the loop; calls written as JSON or as call
syntax ``tool(...)`` are read by :mod:`react_lab._parsing.calls`, calls in another model's native
markup by :mod:`react_lab._parsing.formats` (through :mod:`react_lab._parsing.leaks`, which the native loop
shares).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable

from ._parsing.calls import (
    ANSWER_KEYS,
    FINISH_NAMES,
    answer_text,
    call_as_answer,
    clean_input,
    cut_off,
    cut_off_call,
    find_json_call,
    find_objects,
    is_tool_name,
    load_object,
    object_at,
    object_without_call,
    paren_call,
    python_calls,
    starts_with_label,
    strip_answer_label,
)
from ._parsing.formats import find_calls
from ._parsing.leaks import (
    GLUED,
    Leak,
    bare_call,
    bracket_call,
    decode_markers,
    find_leaks,
    glued_call,
    markup_call,
    markup_piece,
    set_aside_reasoning,
    without_end_tokens,
)
from .protocol import OBSERVATION, ParseResult, clip, shown, unknown_tool_message, visible

#: Words models write in place of a tool when they mean "no tool".
NO_TOOL_WORDS = {"none", "n/a", "na", "null", "no tool", "nothing", "-"}


# Label regexes. Each is anchored to a line start (MULTILINE) and written so that no two
# neighbouring parts can match the same character (a run of spaces goes to exactly one
# ``[ \t]*``): the regex engine then never backtracks more than one line, and parsing stays
# linear however long or strange the text is.
# A label ends in ":" or a full-width "\uff1a" / small "\ufe55" colon (CJK text writes those).
#: What may stand before a label on its line: spaces, quote and markdown marks, and the
#: invisible characters some tokenizers emit (a byte-order mark, zero-width spaces and joiners).
_LEAD = r"[ \t>*_#\ufeff\u200b-\u200d\u2060]*"
_LABEL = "^" + _LEAD + r"{name}[ \t]*(?:(\d+)[ \t]*)?(?:\*+[ \t]*)?[:\uff1a\ufe55][ \t*]*"
_ACTION_LINE = re.compile(_LABEL.format(name="Action"), re.MULTILINE | re.IGNORECASE)
_INPUT_LINE = re.compile("^" + _LEAD + r"Action[ \t]*(?:(\d+)[ \t]*)?Input[ \t]*(?:\*+[ \t]*)?[:\uff1a\ufe55][ \t*]*",
                         re.MULTILINE | re.IGNORECASE)
_ANSWER_LINE = re.compile(_LABEL.format(name=r"(?:Final[ \t]+)?Answer"), re.MULTILINE | re.IGNORECASE)
_THOUGHT_LINE = re.compile(_LABEL.format(name="Thought"), re.MULTILINE | re.IGNORECASE)
_ANY_LABEL = re.compile("^" + _LEAD + r"(?:Thought|Action|Observation|Question|(?:Final[ \t]+)?Answer)\b"
                        r"[ \t]*(?:\d+[ \t]*)?(?:Input[ \t]*)?(?:\*+[ \t]*)?[:\uff1a\ufe55]",
                        re.MULTILINE | re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*```[\w-]*[ \t]*$", re.MULTILINE)

#: Every character ``str.splitlines()`` ends a line at, other than ``"\n"``. The parser
#: writes each as ``"\n"`` (one character for one, so indices into the text stay valid).
_LINE_BREAKS = str.maketrans(dict.fromkeys("\r\v\f\x1c\x1d\x1e\x85\u2028\u2029", "\n"))

# What a model-written Observation label looks like (see find_forged). Labels are read with
# full-width letters folded to ASCII ("\uff2f\uff42\uff53" is "Obs"), one character for one.
_LABEL_VIEW = {**_LINE_BREAKS, **{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}}
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>\n]{0,40}>|<[|\uff5c][^<>\n|\uff5c]{0,40}[|\uff5c]>")  # and <|im_end|>
_OBS_TAG = re.compile(r"[^\w<]*<observations?(?:[ \t][^<>\n]{0,40})?>", re.IGNORECASE)  # <observation>
_INLINE_OBS = re.compile(r"(?<=[\s\])}>`])[*_]*(?:Observations?|OBSERVATIONS?)[ \t*_]*(?:\d+[ \t*_]*)?:")
_OBS_WORD = re.compile(r"observation", re.IGNORECASE)
_OBS_HEAD = (
    r"[\W\d_]*"                                        # markdown, list markers, numbers, zero-width chars
    r"observations?"                                   # the label, singular or plural
    r"[\s\d*_#.()\[\]`~\u200b-\u200d\u2060\ufeff]*")   # step number, emphasis, spaces (no letters)
_OBS_LABEL = re.compile(_OBS_HEAD + r"(?:[:\uff1a]|[-\u2013\u2014](?![^\W\d_]))",  # : or ：, or a dash
                        re.IGNORECASE)                                          # not joined to a word
# The whole line a heading-style label: capitalised, with markdown heading or emphasis marks
# and a step number at most (prose and plans write "observation.", "- Observation", "(observation)").
_OBS_BARE = re.compile(r"[ \t>#*_]*(?:Observations?|OBSERVATIONS?)[ \t*_]*(?:\d+[ \t*_]*)?")
_NOT_LETTERS = re.compile(r"[\W\d_]*")  # a letter is [^\W\d_]: a word character that is not a digit or _

_BLANK_OR_FENCE_LINE = re.compile(r"[ \t]*(?:```[\w-]*[ \t]*)?\n")


# --------------------------------------------------------------------------- tolerant parser

def _one_newline(text: str) -> str:
    """``text`` with every line break written as ``"\\n"``: same length, so indices into it are indices into ``text``."""
    return text.translate(_LINE_BREAKS)


def _is_observation_label(line: str, finished: bool = False) -> bool:
    """True if ``line`` (one line, no newline) opens with an ``Observation`` label; see :func:`find_forged`.

    ``finished``: a line break follows ``line``, so a line that is the label alone counts.
    """
    if "<" in line:
        if _OBS_TAG.match(line):
            return True
        line = _HTML_TAG.sub("", line)
    return _OBS_LABEL.match(line) is not None or (finished and _OBS_BARE.fullmatch(line) is not None)


def _inline_observation(line: str) -> int | None:
    """Where an ``Observation:`` label starts after the call on an ``Action`` line, or None.

    ``Action: search[x] Observation: {...}``: the label follows a call whose brackets are
    all closed (so ``search["Observation: x"]`` is an argument) with a space or a closing
    mark before it; capitalised, as a label is. One pass over the line.
    """
    action = _ACTION_LINE.match(line)
    if action is None:
        return None
    depth, pos = 0, action.end()
    for m in _INLINE_OBS.finditer(line, action.end()):
        for ch in line[pos:m.start()]:
            depth += 1 if ch in "[({" else -1 if ch in "])}" else 0
        pos = m.start()
        if depth <= 0 and line[action.end():m.start()].strip():
            return m.start()
    return None


def find_forged(text: str) -> int | None:
    """Index where the first model-written ``Observation`` line starts, or None.

    A line counts when, with short HTML tags (``<b>``) left out, it is: characters that are
    not letters (markdown ``**``/``#``/``>``, list markers ``-``/``1.``, zero-width spaces),
    ``Observation(s)`` in any case, then only spaces, digits, ``*``, ``_``, ``#``, ``.``,
    ``~``, backticks, brackets and zero-width characters, then ``:``, ``：`` or a dash
    (``-``, ``–``, ``—``) that does not join a word (``Observation-based``). A finished line
    (a line break follows) that is the label alone, as a heading, counts too --
    ``Observation``, ``**Observation 2**``, ``### Observations``, ``<b>Observation</b>``:
    capitalised, with heading or emphasis marks and a step number at most (not ``-
    Observation`` in a list, nor ``observation.`` ending a sentence); the last line of
    ``text`` is not finished. So ``- Observation (1):`` counts; ``Observational data:``,
    ``Observation shows that x: y`` and ``the observation: ...`` do not. So does a line
    opening with an ``<observation>`` tag, a label after a special token
    (``<|im_end|>Observation:``), a label in full-width letters (``Ｏｂｓｅｒｖａｔｉｏｎ:``), and
    ``Observation:`` after the call on an ``Action`` line (``Action: search[x] Observation:
    {...}``): then the index is that label's, so the action is kept. Any line break
    ``str.splitlines()`` knows ends a line. Linear in ``len(text)``: only lines holding the
    word are looked at, each once.
    """
    lines = text.translate(_LABEL_VIEW)
    pos = 0
    while (hit := _OBS_WORD.search(lines, pos)) is not None:
        start = lines.rfind("\n", 0, hit.start()) + 1
        end = lines.find("\n", hit.end())
        end = len(lines) if end < 0 else end
        if _is_observation_label(lines[start:end], finished=end < len(lines)):
            return start
        inline = _inline_observation(lines[start:end])
        if inline is not None:
            return start + inline
        pos = end
    return None


def settled_forgery(text: str) -> int | None:
    """:func:`find_forged` for a completion still being written: an index no later text can undo.

    The index of the first model-written ``Observation`` line once nothing written next
    can change the verdict: its line is finished, or its label is complete (``:``/``：``,
    or a dash already followed by a character) with no ``<`` a later ``>`` could make a
    tag; else None. For every continuation ``more``, ``find_forged(text + more)`` equals a
    result that is not None, so a streamed completion can be ended there. Linear.
    """
    at = find_forged(text)
    if at is None:
        return None
    lines = text.translate(_LABEL_VIEW)
    if lines.find("\n", at) >= 0:
        return at  # find_forged reads whole lines: a finished line is final
    line = lines[at:]
    label = _OBS_LABEL.match(line)
    if "<" in line or label is None:
        return None  # a later ">" could make a tag that hides or moves the label
    if line[label.end() - 1] in "-\u2013\u2014" and label.end() == len(line):
        return None  # "Observation -" may yet become "Observation -based"
    return at


def trim_partial_stop(text: str, word: str = OBSERVATION) -> str:
    """Drop a last line that is a cut-off start of ``word`` (``"\\nObserv"``), as servers leave it.

    The last line is compared without HTML tags, leading non-letters (``**``, ``- ``,
    ``1. ``) and trailing spaces, ``*`` and ``_``, as :func:`find_forged` reads labels.
    Returns ``text`` unchanged otherwise.
    """
    view = text.translate(_LABEL_VIEW)
    cut = view.rfind("\n")
    if cut < 0:
        return text
    last = _HTML_TAG.sub("", view[cut + 1:])
    frag = last[_NOT_LETTERS.match(last).end():].rstrip(" \t*_")
    if frag and word.lower().startswith(frag.lower()):
        return text[:cut]
    return text


def truncate_forged(text: str) -> str:
    """Cut a completion client-side as ``stop`` would have: drop the forged span, trim ``"\\nObs"``.

    For providers that reject ``stop`` (some hosted reasoning models) or servers that
    catch the stop word a token late and return its first piece. Returns the text
    before the first model-written ``Observation`` line, without trailing whitespace or
    a last line that is a cut-off start of ``Observation``. Never raises.
    """
    return _truncate(text)[0]


def _truncate(text: str) -> tuple[str, bool]:
    """:func:`truncate_forged`'s text, and whether a forged ``Observation`` line was cut."""
    cut = find_forged(text)
    kept = text if cut is None else text[:cut]
    return trim_partial_stop(kept.rstrip()).rstrip(), cut is not None


def parse(text: str, tools: Iterable[str] | None = None, *, finish_reason: str | None = None,
          max_tokens: int | None = None) -> ParseResult:
    """Parse real model text into an action, a final answer, or an error. Never raises.

    Tolerates: numbered and lower-case labels (``Action 2:``, ``action:``), full-width
    colons (``Action：``), leading whitespace and markdown, trailing text after ``]``, a
    missing ``]``, a partial stop word at the end, blank lines between labels, any line
    break (``\\r``, ``\\u2028``, ...), four dialects (``tool[input]`` from the paper;
    ``Action: tool`` + ``Action Input: ...``; call syntax ``tool(...)`` with JSON, Python
    literals or keywords inside; a JSON call blob, fenced or not, its name and input under
    any of the keys in :data:`react_lab._parsing.calls.NAME_KEYS` and
    :data:`react_lab._parsing.calls.INPUT_KEYS`), Python-literal dicts (``ast.literal_eval``,
    never ``eval``), other models' native call markup (Harmony, DeepSeek, Mistral, Gemma,
    Qwen, GLM, Kimi, Llama, ...: :mod:`react_lab._parsing.formats`; labels inside markup are not
    labels, and markup is never an answer), a line that is only a call (``search("x")``,
    ``search{...}``) and tokenizer markers for spaces (``▁``). A JSON call written after
    an answer label is the call. Everything from a model-written ``Observation`` line on
    (:func:`find_forged`) is dropped and ``forged`` is set, so an answer written after a
    forged observation is never taken. The first action or answer in the text wins.
    Reasoning blocks (``<think>...</think>``, Harmony's analysis channel:
    :func:`react_lab._parsing.leaks.set_aside_reasoning`) are set aside before any label is read:
    what is in them is never an action or an answer, and is kept in ``reasoning``. A call
    whose markup lost a tag is read when the tags left name a tool and its arguments
    unambiguously (a GLM name run into its first key is split where a tool of ``tools`` ends).
    An answer never holds call markup or a special token; an answer written as a call
    (``finish(answer="...")``) is its text as written.

    Errors, each one line that says what was seen and what to write instead: a tool name
    that is not an identifier -- never dispatched; with ``tools``, a name not in the list;
    a call cut off before its ``}``; a JSON object with keys the parser does not read (the
    keys are named); markup that cannot be read (its format named); an empty answer (only
    invisible characters, such as zero-width spaces, count as empty); an answer label with
    another label after it on its line (``Answer: Action: ...``, named); an empty
    completion; a completion that stops mid-sentence in a Thought. ``finish_reason``
    and ``max_tokens`` are the completion's: with ``"length"`` every error says the
    completion was cut at the token limit. Linear in the length of the text, whatever the text.
    """
    try:
        return _parse(text if isinstance(text, str) else str(text), tools, finish_reason, max_tokens)
    except Exception as exc:  # a parser must never take the loop down  # pragma: no cover
        return ParseResult("error", reason=f"could not read the completion ({type(exc).__name__}); "
                                           "write one line: Action: tool[input]")


def _parse(text: str, tools: Iterable[str] | None, finish_reason: str | None,
           max_tokens: int | None) -> ParseResult:
    tools = list(tools) if tools is not None else None
    text = _one_newline(text.replace("\r\n", "\n"))  # a NUL stays: the argument rule refuses it by field
    text = decode_markers(text)[0]
    cut = None  # the completion hit its token limit: every error says so
    if finish_reason in ("length", "max_tokens"):
        cut = "a completion cut at the token limit" + (f" ({max_tokens} tokens)" if max_tokens else "")
    if not text.strip():
        return ParseResult("error", reason=f"{cut}, with no text in it; {_WRITE}" if cut else _EMPTY)
    text, reasoning, aside = set_aside_reasoning(text)  # a draft is never an action or an answer
    if aside is not None and not visible(text):
        result = ParseResult("error", thought=reasoning, reasoning=reasoning, reason=(
            f"the completion holds only {aside}, no action and no answer; nothing in reasoning is run "
            f"or taken as the answer: after the reasoning, {_WRITE}"))
    else:
        text, forged = _truncate(text)
        result = _read(text, tools, forged, cut, finish_reason, aside)
        if aside is not None:
            result = replace(result, reasoning=reasoning, thought=result.thought or reasoning)
    if cut and result.kind == "error" and not result.reason.startswith(cut):
        result = replace(result, reason=f"{cut}: {result.reason}")
    return result


def _read(text: str, tools: list[str] | None, forged: bool, cut: str | None, finish_reason: str | None,
          aside: str | None = None):
    """The first action or answer in ``text`` (already cut before any forged Observation).

    ``aside``: the reasoning set aside before, in words, for a message that found nothing else.
    """
    candidates = [c for c in (_find_action(text), _find_answer(text)) if c is not None]
    label = min(candidates, key=lambda c: c[0]) if candidates else None
    markup = markup_call(text, tools)  # (start, end, result, thought)
    if markup is not None and (label is None or markup[0] < label[1]):
        # markup before the first label, or inside it ("Action: <tool_call>...", "Answer: <|channel|>...")
        begin = label[0] if label is not None and label[0] < markup[0] else markup[0]
        return _checked(markup[2], text, begin, markup[1], tools, forged, markup[3])
    if label is None:
        fallbacks = [c for c in (find_json_call(text, 0), bare_call(text)) if c is not None]
        if not fallbacks:
            reason = _no_call_reason(text, forged, cut, finish_reason)
            return ParseResult("error", forged=forged, kept=text, thought=_thought(text, len(text)),
                               reason=f"outside {aside}: {reason}" if aside else reason)
        label = min(fallbacks, key=lambda c: c[0])
    start, end, result = label
    return _checked(result, text, start, end, tools, forged)


def _checked(result: ParseResult, text: str, start: int, end: int, tools: list[str] | None,
             forged: bool, thought: str | None = None) -> ParseResult:
    """The final result for the action, answer or error read at ``text[start:end]``: names checked."""
    same = dict(thought=thought or _thought(text, start), forged=forged, dialect=result.dialect,
                kept=text[:end].rstrip())
    if result.kind == "error":  # a call or an answer the model can fix: the reason says how
        return ParseResult("error", tool=result.tool, input=result.input, reason=result.reason, **same)
    if result.kind != "action":
        if not visible(result.answer or ""):  # {"action": "Final Answer", "action_input": ""}, "\u200b"
            return ParseResult("error", reason=_NO_ANSWER, **same)
        piece = markup_piece(result.answer)
        if piece is not None:  # "Answer: 42 </parameter>": markup is never part of an answer
            return ParseResult("error", **same, reason=(
                f"the answer holds call markup or a special token ({shown(piece, 40)}), which is never "
                "part of an answer; write the answer as plain text after 'Answer:'"))
        return ParseResult(result.kind, answer=result.answer, **same)
    name = result.tool.strip()
    if re.search(r"(?<!\w)observations?\b", name, re.IGNORECASE):
        # "Action: Observation: ..." -- the model wrote an observation, not a tool name
        return ParseResult("error", forged=True, kept=text[:start].rstrip(), thought=same["thought"],
                           reason="the action line holds an Observation, not a tool name; write "
                           "'Action: tool_name[arguments]' and let the loop write the observation")
    if not name:  # "Action: ''" or "Action: **[x]": quotes and markdown, no name
        return ParseResult("error", input=result.input, **same,
                           reason="the Action line names no tool; write 'Action: tool_name[arguments]'")
    if name.lower() in FINISH_NAMES:  # finish(answer="...") is the answer's text, as written
        return _checked(ParseResult("final", answer=answer_text(result.input), dialect=result.dialect),
                        text, start, end, tools, forged, thought)
    if name.lower().strip(".") in NO_TOOL_WORDS:
        return ParseResult("error", tool=name, **same, reason=f"{shown(name, 120)} is not an available tool "
                           "and no final-answer label is present; ask for a listed tool or an "
                           "'Answer:'/'Final Answer:' line")
    if not is_tool_name(name) and not (tools is not None and name in tools):
        return ParseResult("error", tool=name, input=result.input, reason=_not_a_name_reason(name, tools), **same)
    if tools is not None and name not in tools:
        reason = unknown_tool_message(name, tools) if " " not in name else _not_a_name_reason(name, tools)
        reason += f" ({result.reason})" if result.reason else ""  # the markup it came from
        return ParseResult("error", tool=name, input=result.input, reason=reason, **same)
    return ParseResult("action", tool=name, input=result.input, **same)


def _find_action(text: str):
    """First ``Action:`` label in either text dialect, as ``(start, end, result)``."""
    blob_searched = False
    for m in _ACTION_LINE.finditer(text):
        rest_start = m.end()
        line_end = text.find("\n", rest_start)
        line_end = len(text) if line_end < 0 else line_end
        rest = text[rest_start:line_end].strip()
        if not rest:
            # "Action:" alone on its line: a JSON blob below, or "Action Input" style name below.
            # The blob search reads on to the end of the text, so it runs once, at the first
            # such line (once per line would be quadratic: "Action:\n{\n" * 10_000).
            if not blob_searched:
                blob_searched = True
                blob = find_json_call(text, rest_start)
                if blob is not None:
                    return (m.start(), blob[1], blob[2])
            continue
        call = paren_call(text, rest_start, line_end)
        if call is not None:  # "Action: search(...)": call syntax, read as a call
            return (m.start(), call[1], call[2])
        listed = python_calls(rest) if rest.startswith("[") else None  # "Action: [search(query="x")]"
        if listed:
            return (m.start(), line_end, ParseResult("action", tool=listed[0][0], input=listed[0][1], dialect="call"))
        bracket = bracket_call(text, rest_start, line_end)
        if bracket is not None:
            name, value, end = bracket
            return (m.start(), end, ParseResult("action", tool=name, input=clean_input(value),
                                                dialect="brackets"))
        glued = GLUED.match(text, rest_start, line_end)
        if glued is not None:  # "Action: search{"query": "x"}": a name glued to its object
            return (m.start(), *glued_call(text, glued)[1:])
        if rest.startswith("{"):
            blob = find_json_call(text, rest_start)
            if blob is not None:
                return (m.start(), blob[1], blob[2])
            return (m.start(), line_end, object_without_call(text, text.index("{", rest_start)))
        name = rest.strip("`*\"' ")
        inp = _INPUT_LINE.search(text, line_end)
        if inp and not _ANY_LABEL.search(text[line_end:inp.start()].replace("Action Input", "")):
            value, end = _input_value(text, inp.end())
            if isinstance(value, str) and value.startswith("{") and object_at(value, 0)[1] is None:
                return (m.start(), end, cut_off(name, "the Action Input object"))
            return (m.start(), end, ParseResult("action", tool=name, input=value, dialect="action_input"))
        return (m.start(), line_end, ParseResult("action", tool=name, input="", dialect="action_input"))
    return None


def _input_value(text: str, start: int):
    """The value after ``Action Input:``: a JSON/dict value by balance, else the rest of the line."""
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    rest = text[start:line_end].strip()
    if not rest or rest.startswith(("{", "```")):
        j = start
        # skip blank lines and fences to the value
        while (m := _BLANK_OR_FENCE_LINE.match(text, j)) is not None:
            j = m.end()
        obj = object_at(text, j)
        if obj is not None and obj[1] is not None:
            return clean_input(text[obj[0]:obj[1]]), obj[1]
        if not rest:
            nxt = text.find("\n", j)
            nxt = len(text) if nxt < 0 else nxt
            return clean_input(text[j:nxt]), nxt
    return clean_input(rest), line_end


def _find_answer(text: str):
    """First ``Answer:`` / ``Final Answer:`` label, as ``(start, end, result)``."""
    m = _ANSWER_LINE.search(text)
    if not m:
        return None
    begin = m.end()
    while (again := _ANSWER_LINE.match(text[begin:begin + 80])) is not None and again.end():
        begin += again.end()  # "Answer: Final Answer: 42": one label written twice
    answer = text[begin:]
    nxt = _ANY_LABEL.search(answer)
    if nxt and nxt.start() == 0:  # "Answer: Action: search[x]": another label, not an answer
        line = answer.split("\n", 1)[0]
        return (m.start(), begin, ParseResult("error", dialect="answer", reason=(
            f"an Answer label followed by {shown(line, 60)} on the same line: the answer label "
            "says the run is done, the other label says it is not; write the action on its own "
            "line ('Action: tool_name[arguments]') or the answer after 'Answer:'")))
    answer = answer[:nxt.start()] if nxt else answer
    call = call_as_answer(text, begin)
    if call is not None:  # "Answer: {"action": ...}": a tool call where the answer belongs
        return (m.start(), call[1], call[2])
    final = without_end_tokens(answer.strip())  # "42<|im_end|>": the turn's end token is not the answer
    if not visible(final):  # nothing, or only zero-width and other invisible characters
        return (m.start(), m.end(), ParseResult("error", dialect="answer", reason=_NO_ANSWER))
    return (m.start(), begin + len(answer), ParseResult("final", answer=final, dialect="answer"))


#: Special tokens and reasoning tags (``<|im_start|>``, ``<｜tool▁calls▁begin｜>``, ``<think>``): not reasoning.
_TOKENS = re.compile(r"<[|\uff5c][^<>\n]{0,60}?[|\uff5c]>|</?think>|<\|[\w\"]{1,40}>|<[\w\"]{1,40}\|>")


def _thought(text: str, upto: int) -> str | None:
    """The reasoning before position ``upto``: after the last ``Thought:`` label, else all of it."""
    head = _TOKENS.sub("", text[:upto])
    labels = list(_THOUGHT_LINE.finditer(head))
    if labels:
        head = head[labels[-1].end():]
    head = re.sub(r"^Question:.*$", "", head, flags=re.MULTILINE)
    head = _FENCE.sub("", head).strip()
    return head or None


# --------------------------------------------------------------------------- a reply's text, read the same way

@dataclass(frozen=True)
class ReplyText:
    """A reply's text read as :func:`parse` reads a completion (:func:`read_reply`).

    ``answer``: the answer it gives, None when it gives none; ``calls``: the calls written in
    its markup or as JSON (:func:`react_lab._parsing.leaks.find_leaks`); ``saw``: what it holds instead
    of an answer, in words ("a Mistral tool call to create_file, a tool this agent does not
    have"); ``reasoning``: what was set aside as reasoning.
    """

    answer: str | None
    calls: list[Leak]
    saw: str | None = None
    reasoning: str | None = None


def read_reply(text: str | None, tools: Iterable[str] | dict | None = None) -> ReplyText:
    """Read a reply's text (a native reply's content, a best-effort completion) as :func:`parse` would.

    Reasoning is set aside first (:func:`react_lab._parsing.leaks.set_aside_reasoning`): nothing in it
    runs or answers. A call written in the text -- in markup or as JSON
    (:func:`react_lab._parsing.leaks.find_leaks`; ``tools`` as there), or as :func:`parse` reads one
    (``Action: search[x]``, ``search(query="x")``, arguments whose call lost its name) -- is
    never the answer. Harmony's final channel is the answer. Markup that holds no call (a
    ``<tool_call>`` that names no tool) or a special token left in the text (an end-of-turn
    token ends the answer) makes the text no answer. ``saw`` says what it held instead. An
    answer label (``Answer: 42``) or a finish call gives the answer :func:`parse` reads. Text
    with none of these is the answer as it was written, byte for byte. Never raises.
    """
    if not isinstance(text, str):
        return ReplyText(None, [])
    try:
        names = None if tools is None else list(tools)
        plain, reasoning, aside = set_aside_reasoning(decode_markers(text)[0])
        calls = find_leaks(plain, tools)
        if calls:
            return ReplyText(None, calls, "; ".join(c.describe(names) for c in calls[:3]), reasoning)
        frame = next(iter(find_calls(plain, limit=1)), None)
        if frame is not None and frame.answer is None:
            saw = f"{frame.format} tool-call markup {frame.problem or 'that holds no call'}"
            return ReplyText(None, [], saw, reasoning)
        if frame is not None:  # Harmony's final channel is the answer; its analysis is reasoning
            plain = frame.answer
            reasoning = "\n".join(r for r in (reasoning, frame.thought) if r) or None
        read = parse(plain, tools=names)
        if read.kind == "action" or (read.kind == "error" and read.tool is not None):
            return ReplyText(None, [], f"a tool call to {shown(read.tool, 60)} written as text, "
                                       f"as the text protocol writes one ({read.dialect or 'action'})", reasoning)
        if read.kind == "error" and read.reason.startswith(_NAMELESS):
            return ReplyText(None, [], "an arguments object that names no tool", reasoning)
        if read.kind == "final":  # "Answer: 42", finish(answer="42"): the answer the text parser reads
            plain = read.answer
        elif aside is None and frame is None and markup_piece(text) is None:
            return ReplyText(text, [])  # an ordinary answer, as it was written
        answer = without_end_tokens(plain.strip())
        piece = markup_piece(answer)
        if piece is not None:
            return ReplyText(None, [], f"call markup or a special token ({shown(piece, 40)})", reasoning)
        if not visible(answer):
            return ReplyText(None, [], f"only reasoning ({aside})" if aside else "no text", reasoning)
        return ReplyText(answer, [], None, reasoning)
    except Exception:  # noqa: BLE001 -- reading model text must never take the loop down  # pragma: no cover
        return ReplyText(None, [], "text that could not be read", None)


# --------------------------------------------------------------------------- messages

_FIRST_WORD = re.compile(r"[^\W\d][\w.-]*")
#: Another model's call markup (``<function=search>``, ``<tool_call>``), and the name it holds.
_MARKUP = re.compile(r"<(?:function=|invoke[ \t]+name=[\"']?|tool_call>|function_call>)([\w.-]*)",
                     re.IGNORECASE)
_NO_ANSWER = ("the answer is empty; write the answer after the label on the same line, "
              "e.g. 'Answer: INV-2088 was issued on 2026-07-14'")


def _norm(key) -> str:
    return re.sub(r"[\W_]+", "", key.lower()) if isinstance(key, str) else ""


def _nameless_object(text: str) -> str | None:
    """The JSON object that ends ``text`` (only spaces and fences after it), when it is an object; else None."""
    tail = text.rstrip().removesuffix("```").rstrip()
    if not tail.endswith("}"):
        return None
    spans = [s for s in find_objects(text, 0, limit=16) if s[1] == len(tail)]
    obj = load_object(text[spans[0][0]:spans[0][1]]) if spans else None
    if not isinstance(obj, dict) or any(_norm(k) in (*ANSWER_KEYS, "thought") for k in obj):
        return None  # {"thought": ..., "answer": ...} is an answer's shape, not a call's arguments
    return text[spans[0][0]:spans[0][1]]


def _not_a_name_reason(name: str, tools: list[str] | None) -> str:
    """Why ``name`` (from an Action line) cannot be a tool name, and the form to write instead."""
    if name.lstrip().startswith("<"):
        tag = _MARKUP.search(name)
        return (f"{shown(name, 60)} is XML-like markup, not a tool name; write "
                f"'Action: {clip(tag.group(1), 40) if tag and tag.group(1) else 'tool_name'}[arguments]'")
    first = _FIRST_WORD.match(name)
    form = "'Action: tool_name[arguments]'"
    if first and tools and first.group() in tools:
        form = f"'Action: {first.group()}[...]' with the input inside the brackets"
    if tools is not None:
        return f"{unknown_tool_message(name, tools)}; write {form}"
    return (f"{shown(name, 120)} is not a tool name (a tool name is an identifier such as search or "
            f"list_invoices); write {form}")


_NAMELESS = "the completion ends with an arguments object"
_WRITE = "write a short Thought, then one line 'Action: tool_name[arguments]', or 'Answer: ...' when done"
_EMPTY = f"an empty completion: the model wrote no text at all; {_WRITE}"
#: Characters a sentence (or a block) ends with: a completion that stops on another was cut mid-sentence.
_SENTENCE_END = ".!?\u3002\uff01\uff1f\u2026)]}\"'`*>|\u201d\u2019"


def _no_call_reason(text: str, forged: bool = False, cut: str | None = None,
                    finish_reason: str | None = None) -> str:
    """The message for a completion with no action and no answer: what was found instead, and what to write."""
    markup = _MARKUP.search(text)
    if markup is not None:
        name = markup.group(1) or "tool_name"
        return (f"found {shown(markup.group(0), 40)} markup, which this protocol does not read; "
                f"write 'Action: {clip(name, 40)}[arguments]'")
    cut_call = cut_off_call(text)
    if cut_call is not None:
        return cut_call.reason
    if forged:
        return ("the completion went on to write its own Observation (dropped) with no action before "
                "it; write 'Action: tool_name[arguments]' and stop there: the loop writes the observation")
    if cut:
        return f"{cut}, before any action or answer; {_WRITE}"
    nameless = _nameless_object(text)
    if nameless is not None:  # Harmony with its markers stripped: prose, then the arguments alone
        return (f"{_NAMELESS} ({shown(nameless, 40)}) that names no tool: "
                "a call whose name (and markup) was lost; nothing was run; write "
                "'Action: tool_name[arguments]' with the tool's name")
    last = _THOUGHT_LINE.search(text) is not None or _ANY_LABEL.search(text) is None
    if finish_reason is None and last and text.rstrip()[-1:] not in _SENTENCE_END:
        return ("the completion stops mid-sentence in a Thought, with no action and no answer "
                f"(cut off by a token limit?); {_WRITE}")
    return ("no action and no answer found; write one line 'Action: tool_name[arguments]', "
            "or 'Answer: ...' when done")
