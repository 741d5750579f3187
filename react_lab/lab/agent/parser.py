"""The tolerant parser: read real model text into an action, an answer or an error.

The classic loop's regex (:data:`react_lab.protocol.ACTION_RE`) fails on the first
drift. Real completions drift: numbered labels (``Action 2:``), markdown, a cut-off stop
word, an ``Observation`` the model wrote itself. :func:`parse` reads them and never raises;
the loop uses it. It reads a completion in five steps:

1. reasoning blocks (``<think>...</think>``) are set aside: a draft is never an action;
2. everything from the first model-written ``Observation`` line on is dropped, and the
   result says so (``forged``): :func:`find_forged`, :func:`truncate_forged`;
3. the first ``Action:`` or ``Answer:`` label wins, numbered or not, in any case;
4. the tool name is checked against the tools;
5. anything else is an error: one line saying what was seen and what to write instead.

The label regexes (written never to backtrack far) live in :mod:`react_lab._parsing.labels`,
the forged-observation rule in :mod:`react_lab._parsing.forgery`. Models also write a call in
other ways -- JSON, call syntax ``tool(...)``, another model's call markup: the parser hands
those to one function of the private package, :func:`react_lab._parsing.read_other`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping

from ..._parsing import forgery, labels, read_other, reasons
from ..._parsing.brackets import bracket_call
from ..._parsing.calls import FINISH_NAMES, answer_text, clean_input
from ..._parsing.forgery import trim_partial_stop
from ..._parsing.reasoning import set_aside_reasoning
from ..._parsing.reply import ReplyText, read_reply_text
from ..._parsing.tokens import THOUGHT_TOKENS, decode_markers, without_end_tokens
from ...protocol import ParseResult, shown, visible

#: Words models write in place of a tool when they mean "no tool".
NO_TOOL_WORDS = {"none", "n/a", "na", "null", "no tool", "nothing", "-"}


def parse(
    text: str,
    tools: Iterable[str] | Mapping[str, dict] | None = None,
    *,
    finish_reason: str | None = None,
    max_tokens: int | None = None,
) -> ParseResult:
    """Parse real model text into an action, a final answer, or an error. Never raises.

    Tolerates numbered and lower-case labels (``Action 2:``, ``action:``), full-width colons
    (``Action：``), markdown around labels, text after ``]``, a missing ``]``, a cut-off stop
    word, blank lines between labels, any line break (``\\r``, ``\\u2028``). An answer never
    holds call markup or a special token. Every error is one line that says what was seen and
    what to write instead: a tool name that is not an identifier (never dispatched); with
    ``tools``, a name not in the list; a call cut off before its ``}``; markup that cannot be
    read; an empty answer (invisible characters count as empty); ``Answer:`` followed by
    another label on its line; an empty completion; a Thought cut off mid-sentence. With
    ``finish_reason="length"`` every error says the completion was cut at the token limit
    (``max_tokens``). Linear in the length of the text, whatever the text. ``tools``: the
    tool names, or each name mapped to its parameters' schemas (then a value that another
    model's markup writes as text, ``<parameter=invoice_id>2041</parameter>``, is read by its
    declared type); anything else (``tools=5``) is the caller's mistake: ``TypeError``.
    """
    tools = reasons.tool_names_given(tools)  # TypeError for tools that are not names
    try:
        text = "" if text is None else text if isinstance(text, str) else str(text)
        return _parse(text, tools, finish_reason, max_tokens)
    except Exception as exc:  # a parser must never take the loop down  # pragma: no cover
        what = f"could not read the completion ({type(exc).__name__})"
        return ParseResult("error", reason=f"{what}; write one line: Action: tool[input]")


def _parse(text, tools, finish_reason, max_tokens) -> ParseResult:
    """:func:`parse` on a string: the five steps of this module's docstring, in order."""
    tools = [tools] if isinstance(tools, str) else tools  # "search": one name, not six letters
    declared = tools if isinstance(tools, Mapping) else None  # each name's parameters
    tools = list(tools) if tools is not None else None
    text = labels.one_newline(text.replace("\r\n", "\n"))  # every line break a "\n"
    text = decode_markers(text)[0]  # "Action:▁search[x]": tokens joined without decoding
    cut = None  # the completion hit its token limit: every error says so
    if finish_reason in ("length", "max_tokens"):
        tokens = f" ({max_tokens} tokens)" if max_tokens else ""
        cut = f"a completion cut at the token limit{tokens}"
    if not text.strip():
        reason = f"{cut}, with no text in it; {reasons.WRITE}" if cut else reasons.EMPTY
        return ParseResult("error", reason=reason)
    text, reasoning, aside = set_aside_reasoning(text)  # a draft is never an action or an answer
    if aside is not None and not visible(text):
        reason = (
            f"the completion holds only {aside}, no action and no answer; nothing in reasoning "
            f"is run or taken as the answer: after the reasoning, {reasons.WRITE}"
        )
        result = ParseResult("error", thought=reasoning, reasoning=reasoning, reason=reason)
    else:
        text, forged = _truncate(text)
        found = _read(text, declared or tools)
        if found is None:  # no action, no answer: the reason says what was there instead
            reason = reasons.no_call_reason(text, forged, cut, finish_reason)
            reason = f"outside {aside}: {reason}" if aside else reason
            thought = _thought(text, len(text))
            result = ParseResult("error", reason=reason, thought=thought, forged=forged, kept=text)
        else:
            start, end, read, thought = found
            result = _checked(read, text, start, end, declared or tools, forged, thought)
        if aside is not None:
            result = replace(result, reasoning=reasoning, thought=result.thought or reasoning)
    if cut and result.kind == "error" and not result.reason.startswith(cut):
        result = replace(result, reason=f"{cut}: {result.reason}")
    return result


# --------------------------------------------------------------------------- labels


def _read(text: str, tools: list[str] | None):
    """The first action or answer in ``text``, as ``(start, end, result, thought)``; or None."""
    found = [f for f in (_find_action(text), _find_answer(text)) if f is not None]
    first = min(found, key=lambda f: f[0], default=None)
    return read_other(text, tools, first)  # another model's markup may come first


def _find_action(text: str):
    """The first ``Action:`` label and the call after it, as ``(start, end, result, None)``."""
    looked_below = False
    for m in labels.ACTION_LINE.finditer(text):
        line_end = labels.end_of_line(text, m.end())
        if labels.FULL_WIDTH_CALL.match(text, m.end()):  # "search［x］": brackets read as ASCII
            text = (
                text[: m.end()]
                + text[m.end() : line_end].translate(labels.FULL_WIDTH)
                + text[line_end:]
            )
        rest = text[m.end() : line_end].strip()
        if not rest and looked_below:
            continue  # only the first bare "Action:" reads on to the end: linear, not quadratic
        other = read_other(text, action=m.end())  # JSON, call syntax, Action Input: ...
        if other is not None:
            return (m.start(), *other[1:])
        if not rest:  # "Action:" alone on its line, no JSON call below it
            looked_below = True
            continue
        call = bracket_call(text, m.end(), line_end)  # the paper's form: tool[input]
        if call is not None:
            name, value, end = call
            action = ParseResult("action", tool=name, input=clean_input(value), dialect="brackets")
            return (m.start(), end, action, None)
        name = rest.strip("`*\"' ")  # a name alone: "Action: search"
        action = ParseResult("action", tool=name, input="", dialect="action_input")
        return (m.start(), line_end, action, None)
    return None


def _find_answer(text: str):
    """The first answer label and the text after it, as ``(start, end, result, None)``."""
    m = labels.ANSWER_LINE.search(text)
    if m is None:
        return None
    begin = labels.text_start(m)  # "Answer: **42**" keeps its emphasis
    while (again := labels.ANSWER_LINE.match(text[begin : begin + 80])) is not None and again.end():
        begin += again.end()  # "Answer: Final Answer: 42": one label written twice
    answer = text[begin:]
    nxt = labels.ANY_LABEL.search(answer)
    if nxt and nxt.start() == 0:  # "Answer: Action: search[x]": another label, not an answer
        line = answer.split("\n", 1)[0]
        reason = (
            f"an Answer label followed by {shown(line, 60)} on the same line: the answer label "
            "says the run is done, the other label says it is not; write the action on its own "
            "line ('Action: tool_name[arguments]') or the answer after 'Answer:'"
        )
        return (m.start(), begin, ParseResult("error", dialect="answer", reason=reason), None)
    answer = answer[: nxt.start()] if nxt else answer
    call = read_other(text, answer=begin)  # "Answer: {"action": ...}": a call, not an answer
    if call is not None:
        return (m.start(), *call[1:])
    final = without_end_tokens(answer.strip())  # "42<|im_end|>": the end token is not the answer
    if not visible(final):  # nothing, or only zero-width and other invisible characters
        empty = ParseResult("error", dialect="answer", reason=reasons.NO_ANSWER)
        return (m.start(), m.end(), empty, None)
    answered = ParseResult("final", answer=final, dialect="answer")
    return (m.start(), begin + len(answer), answered, None)


def _thought(text: str, upto: int) -> str | None:
    """The reasoning before position ``upto``: after the last ``Thought:`` label, else all of it."""
    head = THOUGHT_TOKENS.sub("", text[:upto])  # special tokens are not reasoning
    thoughts = list(labels.THOUGHT_LINE.finditer(head))
    if thoughts:
        head = head[thoughts[-1].end() :]
    head = labels.QUESTION_LINE.sub("", head)
    head = labels.FENCE_LINE.sub("", head).strip()
    return head or None


# --------------------------------------------------------------------------- names


def _checked(result, text, start, end, tools, forged, thought=None) -> ParseResult:
    """The result for the action, answer or error read at ``text[start:end]``: names checked."""
    same = dict(
        thought=thought or _thought(text, start),
        forged=forged,
        dialect=result.dialect,
        kept=text[:end].rstrip(),
    )
    if result.kind == "error":  # a call or an answer the model can fix: the reason says how
        return ParseResult(
            "error", tool=result.tool, input=result.input, reason=result.reason, **same
        )
    if result.kind == "final":  # empty, or holding call markup: not an answer
        reason = reasons.answer_reason(result.answer, tools)
        if reason is not None:
            return ParseResult("error", reason=reason, **same)
        return ParseResult("final", answer=result.answer, **same)
    name = result.tool.strip()
    if labels.OBSERVATION_WORD.search(name):  # "Action: Observation: ...": not a tool
        reason = (
            "the action line holds an Observation, not a tool name; write "
            "'Action: tool_name[arguments]' and let the loop write the observation"
        )
        kept = text[:start].rstrip()
        return ParseResult("error", forged=True, kept=kept, thought=same["thought"], reason=reason)
    if not name:  # "Action: ''" or "Action: **[x]": quotes and markdown, no name
        reason = "the Action line names no tool; write 'Action: tool_name[arguments]'"
        return ParseResult("error", input=result.input, reason=reason, **same)
    if name.lower() in FINISH_NAMES:  # finish(answer="...") is the answer's text, as written
        final = ParseResult("final", answer=answer_text(result.input), dialect=result.dialect)
        return _checked(final, text, start, end, tools, forged, thought)
    if name.lower().strip(".") in NO_TOOL_WORDS:
        reason = (
            f"{shown(name, 120)} is not an available tool and no final-answer label is present; "
            "ask for a listed tool or an 'Answer:'/'Final Answer:' line"
        )
        return ParseResult("error", tool=name, reason=reason, **same)
    reason = reasons.name_problem(name, tools, result.reason)  # no tool, or a channel's name
    if reason is not None:
        return ParseResult("error", tool=name, input=result.input, reason=reason, **same)
    unmeant = reasons.input_problem(result.input)  # a lone surrogate, an entity: never passed on
    if unmeant is not None:
        return ParseResult("error", tool=name, reason=unmeant, **same)
    return ParseResult("action", tool=name, input=result.input, **same)


# --------------------------------------------------------------------------- forged observations


def find_forged(text: str) -> int | None:
    """Index where the first model-written ``Observation`` line starts, or None.

    The loop writes every observation, so a line the model wrote that opens with an
    ``Observation`` label is forged: ``Observation:``, ``Observation 2:``, ``**Observation:**``,
    ``- Observation (1):``, ``<observation>``, ``Ｏｂｓｅｒｖａｔｉｏｎ:``, the label alone on a
    finished line as a heading, and ``Observation:`` after the call on an ``Action`` line
    (then the index is that label's, so the action is kept). ``Observational data:`` and
    ``the observation: ...`` are not labels. The rule in full is
    :mod:`react_lab._parsing.forgery`'s. Any line break ``str.splitlines()`` knows ends a
    line. Linear in ``len(text)``: only lines holding the word are looked at, each once.
    """
    lines = text.translate(forgery.LABEL_VIEW)
    pos = 0
    while (hit := forgery.OBS_WORD.search(lines, pos)) is not None:
        start = lines.rfind("\n", 0, hit.start()) + 1
        end = labels.end_of_line(lines, hit.end())
        if forgery.is_observation_label(lines[start:end], finished=end < len(lines)):
            return start
        inline = forgery.inline_observation(lines[start:end])
        if inline is not None:
            return start + inline
        pos = end
    return None


def truncate_forged(text: str) -> str:
    """Cut a completion client-side as ``stop`` would have: drop the forged span, trim ``"\\nObs"``.

    For providers that reject ``stop`` (some hosted reasoning models) or servers that catch
    the stop word a token late and return its first piece. Returns the text before the first
    model-written ``Observation`` line, without trailing whitespace or a last line that is a
    cut-off start of ``Observation`` (:func:`trim_partial_stop`). Never raises.
    """
    return _truncate(text)[0]


def _truncate(text: str) -> tuple[str, bool]:
    """:func:`truncate_forged`'s text, and whether a forged ``Observation`` line was cut."""
    cut = find_forged(text)
    kept = text if cut is None else text[:cut]
    return trim_partial_stop(kept.rstrip()).rstrip(), cut is not None


def read_reply(text: str | None, tools: Iterable[str] | dict | None = None) -> ReplyText:
    """Read a reply's text (a native reply's content, a best-effort completion) as parse would.

    Reasoning is set aside; a call written in the text (in markup, as JSON, or as
    :func:`parse` reads one: ``Action: search[x]``) is never the answer, nor is text holding
    call markup or a special token: ``saw`` says what it held instead, ``calls`` the calls
    written in markup or as JSON. An answer label (``Answer: 42``) or a finish call gives the
    answer :func:`parse` reads; other text is the answer as it was written, byte for byte
    (:func:`react_lab._parsing.reply.read_reply_text` in full). Never raises.
    """
    return read_reply_text(text, tools, parse)
