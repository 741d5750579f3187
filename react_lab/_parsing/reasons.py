"""The parser's messages for the rarer shapes: what was seen, and what to write instead.

Every error :func:`react_lab.lab.agent.parser.parse` returns is one line the model can act on. The
common ones are written where the parser finds them; these are the ones that need a look at
the text first: a tool name that is not a name (markup, a sentence), a completion with no
action and no answer (markup this protocol does not read, a call cut off, a forged
observation, the token limit, the arguments of a call whose name was lost, a thought cut off
mid-sentence), an answer holding call markup.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from ..protocol import clip, shown, unknown_tool_message, visible
from .answer_calls import call_in_answer
from .brackets import find_brackets
from .calls import (
    ANSWER_KEYS,
    TOOL_NAME,
    TOOL_NAME_RULE,
    cut_off_call,
    is_tool_name,
    load_object,
    norm_key,
)
from .formats import CHANNELS
from .labels import ANY_LABEL, NAME, THOUGHT_LINE
from .messages import unmeant
from .tokens import markup_piece

#: What to write, said at the end of most messages.
WRITE = (
    "write a short Thought, then one line 'Action: tool_name[arguments]', or 'Answer: ...' "
    "when done"
)
EMPTY = f"an empty completion: the model wrote no text at all; {WRITE}"
NO_ANSWER = (
    "the answer is empty; write the answer after the label on the same line, "
    "e.g. 'Answer: INV-2088 was issued on 2026-07-14'"
)
#: An answer of markup's characters only (fences, quotes, brackets, pipes), no letter or digit.
_MARKUP_LEFT = re.compile(r"[\s`\"'<>\[\]{}()|*#_~=:;/\\-]+")
#: How the message for a completion ending with the arguments of a nameless call begins.
NAMELESS = "the completion ends with an arguments object"

_FIRST_WORD = re.compile(NAME)
#: A name alone on the line that ends a text: the line above an arguments object.
_NAME_LINE = re.compile(r"(?:^|\n)[ \t]*(" + NAME + r")[ \t]*\n[ \t]*\Z")
#: Another model's call markup (``<function=search>``, ``<tool_call>``), and the name it holds.
_MARKUP = re.compile(
    r"<(?:function=|invoke[ \t]+name=[\"']?|tool_call>|function_call>)([\w.-]*)", re.IGNORECASE
)
#: Characters a sentence (or a block) ends with: a completion that stops on another was cut
#: mid-sentence.
_SENTENCE_END = ".!?\u3002\uff01\uff1f\u2026)]}\"'`*>|\u201d\u2019"


def tool_names_given(tools: Any) -> Any:
    """``tools`` as the parser takes them (names, or a dict of each name's parameters), or
    ``TypeError``: a caller's mistake (``tools=5``, ``[None]``, a list of schemas) is not the
    model's, so it is not blamed on the completion."""
    if tools is None or isinstance(tools, (str, Mapping)):
        return tools
    if isinstance(tools, bytes) or not isinstance(tools, Iterable):
        raise TypeError(f"tools must be tool names (a list, or a dict by name), got {tools!r:.60}")
    tools = list(tools)
    bad = [t for t in tools if not isinstance(t, str)]
    if bad:
        raise TypeError(
            f"tools must be tool names (strings), got {type(bad[0]).__name__} {bad[0]!r:.40} "
            "among them"
        )
    return tools


def answer_reason(answer: str | None, tools: list[str] | dict | None = None) -> str | None:
    """Why ``answer`` is no answer (empty, or holding call markup), or None when it is one.

    Invisible characters alone (zero-width spaces, a byte-order mark) count as empty, and so
    does a fragment of markup's characters alone (a fence, a quote, a bracket). A call
    in any shape (:func:`react_lab._parsing.answer_calls.call_in_answer`; ``tools``, the
    agent's tool names or each mapped to its parameters, as there), or a JSON call cut off
    before its end, is never part of an answer.
    """
    if not visible(answer or ""):  # {"action": "Final Answer", "action_input": ""}, "\u200b"
        return NO_ANSWER
    if _MARKUP_LEFT.fullmatch(answer):  # "```", '"', ">": what is left of markup, no answer
        return (
            f"the answer {shown(answer, 20)} holds no letter or digit, only what is left of "
            "markup; write the answer as plain text after 'Answer:'"
        )
    cut = cut_off_call(answer)
    if cut is not None:  # 'Answer: {"name": "get_charge", "arguments": {"charge_id": "ch_2V'
        return f"the answer is a call, not an answer: {cut.reason}"
    piece = markup_piece(answer)
    if piece is not None:  # "Answer: 42 </parameter>": markup is never part of an answer
        return (
            f"the answer holds call markup or a special token ({shown(piece, 40)}), which is "
            "never part of an answer; write the answer as plain text after 'Answer:'"
        )
    name = call_in_answer(answer, tools)
    if name is not None and " or " in name:  # 'Answer: {"invoice_id": "INV-2041"}'
        first = clip(name.split(" or ")[0], 40)
        return (
            f"the answer is the arguments of a call to {name}, with the tool's name left out; "
            f"to run one write 'Action: {first}[arguments]', or write the answer as plain "
            "text after 'Answer:'"
        )
    if name is not None:  # "Answer: get_charge(charge_id="ch_1")": a call nobody ran
        return (
            f"the answer holds a call to {shown(name, 40)}, which is never an answer; to run "
            f"it write 'Action: {clip(name, 40)}[arguments]', or write the answer as plain "
            "text after 'Answer:'"
        )
    return None


def name_problem(name: str, tools, markup: str | None = None) -> str | None:
    """Why the tool name ``name`` cannot be run, or None when it can: a declared tool (without
    ``tools``, a name by the one rule: :func:`react_lab._parsing.calls.is_tool_name`), and never
    a vendor's channel name (:data:`react_lab._parsing.formats.CHANNELS`): ``commentary{...}``
    is Harmony's channel with its recipient lost, not a call to a tool named commentary.
    ``markup``: the format the call was written in, for an unknown tool's message."""
    if tools is not None and name in tools:
        return None
    vendor = CHANNELS.get(name.strip().lower())
    if vendor is not None:
        listed = f"one of: {', '.join(tools)}" if tools else "a tool by its name"
        return (
            f"{shown(name, 40)} is {vendor}'s channel name, not a tool: the call's tool name was "
            f"lost; call {listed}, or write 'Answer: ...' when done"
        )
    if not is_tool_name(name):
        return not_a_name(name, tools)
    if tools is None:
        return None
    reason = unknown_tool_message(name, tools) if " " not in name else not_a_name(name, tools)
    return reason + (f" ({markup})" if markup else "")


def call_name_problem(name: str, tools: Mapping) -> str | None:
    """The native check of a call's tool name: None for a declared tool; else a channel's name,
    a name the one rule refuses (:data:`react_lab._parsing.calls.TOOL_NAME`: OpenAI and MCP
    refuse it too), or an unknown tool, in words the model can act on."""
    if name in tools or name.strip().lower() in CHANNELS:
        return name_problem(name, tools)
    if not TOOL_NAME.fullmatch(name):
        listed = ", ".join(tools) or "none"
        return f"{shown(name, 60)} is not a tool name ({TOOL_NAME_RULE}); available: {listed}"
    return None


def input_problem(value: Any) -> str | None:
    """Why a call's input cannot reach the tool as written, or None: a lone surrogate or an
    HTML entity in it (:func:`react_lab._parsing.messages.unmeant`), named."""
    found = unmeant("the input" if not isinstance(value, dict) else "arguments", value)
    if not found:
        return None
    return f"{found[0].replace('arguments/', '', 1)}; nothing was run"


def not_a_name(name: str, tools: list[str] | None) -> str:
    """Why ``name`` (from an Action line) cannot be a tool name, and the form to write instead."""
    if name.lstrip().startswith("<"):
        tag = _MARKUP.search(name)
        tool = clip(tag.group(1), 40) if tag and tag.group(1) else "tool_name"
        return (
            f"{shown(name, 60)} is XML-like markup, not a tool name; "
            f"write 'Action: {tool}[arguments]'"
        )
    first = _FIRST_WORD.match(name)
    form = "'Action: tool_name[arguments]'"
    if first and tools and first.group() in tools:
        form = f"'Action: {first.group()}[...]' with the input inside the brackets"
    if tools is not None:
        return f"{unknown_tool_message(name, tools)}; write {form}"
    return (
        f"{shown(name, 120)} is not a tool name (a tool name is an identifier such as search "
        f"or list_invoices); write {form}"
    )


def no_call_reason(
    text: str, forged: bool = False, cut: str | None = None, finish_reason: str | None = None
) -> str:
    """The message for a completion with no action and no answer: what was found instead.

    ``forged``: a model-written Observation was dropped; ``cut``: the completion hit its
    token limit, in words; ``finish_reason``: the completion's.
    """
    markup = _MARKUP.search(text)
    if markup is not None:
        name = markup.group(1) or "tool_name"
        return (
            f"found {shown(markup.group(0), 40)} markup, which this protocol does not read; "
            f"write 'Action: {clip(name, 40)}[arguments]'"
        )
    cut_call = cut_off_call(text)
    if cut_call is not None:
        return cut_call.reason
    if forged:
        return (
            "the completion went on to write its own Observation (dropped) with no action "
            "before it; write 'Action: tool_name[arguments]' and stop there: the loop writes "
            "the observation"
        )
    if cut:
        return f"{cut}, before any action or answer; {WRITE}"
    nameless = _nameless_object(text)
    line = _NAME_LINE.search(text[: text.rfind(nameless)]) if nameless else None
    if line is not None:  # GLM-4-0414's call, no markup: a name line, then the object
        return (
            f"{NAMELESS} ({shown(nameless, 40)}) after the name line {shown(line.group(1), 40)}, "
            "which is no declared tool; nothing was run; write 'Action: tool_name[arguments]' "
            "with a declared tool's name"
        )
    if nameless is not None:  # Harmony with its markers stripped: prose, then the arguments alone
        return (
            f"{NAMELESS} ({shown(nameless, 40)}) that names no tool: "
            "a call whose name (and markup) was lost; nothing was run; write "
            "'Action: tool_name[arguments]' with the tool's name"
        )
    labelled = ANY_LABEL.search(text) is not None
    if finish_reason is None and not labelled:  # no finish reason: say what is missing
        bare = shown(text.strip(), 60)
        return f"the reply is the bare {bare}, with no Action or Answer label; {WRITE}"
    thought = THOUGHT_LINE.search(text) is not None
    if finish_reason is None and thought and text.rstrip()[-1:] not in _SENTENCE_END:
        return (
            f"the completion stops mid-sentence in a Thought, with no action and no answer; {WRITE}"
        )
    return (
        "no action and no answer found; write one line 'Action: tool_name[arguments]', "
        "or 'Answer: ...' when done"
    )


def _nameless_object(text: str) -> str | None:
    """The JSON object that ends ``text`` (only spaces and fences after it), when it is one."""
    tail = text.rstrip().removesuffix("```").rstrip()
    if not tail.endswith("}"):
        return None
    spans = [s for s in find_brackets(text, 0, limit=16) if s[1] == len(tail)]
    obj = load_object(text[spans[0][0] : spans[0][1]]) if spans else None
    if not isinstance(obj, dict) or any(norm_key(k) in (*ANSWER_KEYS, "thought") for k in obj):
        return None  # {"thought": ..., "answer": ...} is an answer's shape, not a call's arguments
    return text[spans[0][0] : spans[0][1]]
