"""The ReAct text protocol: three labels, a prompt with exemplars, a stop sequence, a regex.

ReAct (Yao et al., 2022, "ReAct: Synergizing Reasoning and Acting in Language Models") has
the model write ``Thought:`` and ``Action: tool[input]`` lines into its own text. The program,
not the model, writes each ``Observation:`` line. Three pieces make that work:

* the prompt, which teaches the format by example (the *exemplar*): :func:`build_prompt`;
* :data:`STOP`, the stop sequence that cuts the completion before the model can write an
  observation of its own;
* the parser, which decides which characters are a tool call. Here is the classic loop's regex,
:data:`ACTION_RE`, kept exactly as a teaching artifact (the lab's experiments read with it as the
classic loop did: :func:`react_lab.lab.experiments.abuses.strict_parse`). The tolerant parser the
loop uses on real model text is :func:`react_lab.lab.agent.parser.parse`; it returns a
:class:`ParseResult`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

THOUGHT, ACTION, OBSERVATION = "Thought", "Action", "Observation"

#: Sent as ``stop=``: the provider ends the completion where an observation would begin
#: and leaves these characters out. Two forms, because models also write the label on
#: a new line with a step number ("Observation 2:").
STOP = ["Observation:", "\nObservation"]

#: Completion tokens per model call when the caller does not say (both loops, the backends,
#: the CLI).
MAX_TOKENS = 256

#: The classic loop's action regex: ``^Action:`` anchored to a line start (MULTILINE),
#: a word-character tool name, everything inside the brackets as one string.
ACTION_RE = re.compile(r"^Action:\s*(\w+)\[(.*)\]\s*$", re.MULTILINE)

#: The answer, anchored as the action is: a line that starts with ``Answer:``, its text the
#: rest of that line ("...the Answer: is unclear" in a thought is not one).
ANSWER_RE = re.compile(r"^Answer:[ \t]*(.*)$", re.MULTILINE)


# --------------------------------------------------------------------------- prompt

INSTRUCTIONS = """\
You answer questions about a billing system by repeating three steps.
Thought: think about what you need to find out next.
Action: call exactly one tool, written as tool_name[arguments].
Observation: the tool's result. The program writes this line for you; never write it yourself.
When you know the answer, write one last line:
Answer: <your answer>"""


@dataclass(frozen=True)
class Exemplar:
    """A worked exchange shown in the prompt (a few-shot example).

    ``steps`` is a list of ``(thought, action, observation)`` triples, then
    ``final_thought`` and ``answer``. The observations must be what the real tools
    return (``tests/test_protocol.py`` checks them against the database).
    """

    question: str
    steps: tuple[tuple[str, str, str], ...]
    final_thought: str
    answer: str

    def render(self, mark: Callable[[str, str], str] | None = None) -> str:
        """Render as protocol text, ``Question:`` line first.

        ``mark(observation, tool_name)``, when given, rewrites each observation as the
        loop will write live ones (the guards' data markers).
        """
        lines = [f"Question: {self.question}"]
        for thought, action, observation in self.steps:
            observation = mark(observation, action.split("[")[0]) if mark else observation
            lines += [
                f"{THOUGHT}: {thought}",
                f"{ACTION}: {action}",
                f"{OBSERVATION}: {observation}",
            ]
        lines += [f"{THOUGHT}: {self.final_thought}", f"Answer: {self.answer}"]
        return "\n".join(lines)


#: Worked exchanges over the shipped database. Their observations are real tool output
#: (long JSON lines, so they live in ``react_lab/data/exemplars.json``), checked against the
#: database by ``tests/test_protocol.py::test_exemplars_match_the_tools``.
EXEMPLARS: tuple[Exemplar, ...] = tuple(
    Exemplar(
        ex["question"],
        tuple((s["thought"], s["action"], s["observation"]) for s in ex["steps"]),
        ex["final_thought"],
        ex["answer"],
    )
    for ex in json.loads((Path(__file__).parent / "data" / "exemplars.json").read_bytes())
)


def build_prompt(
    question: str,
    tools: Iterable[Any],
    exemplars: Iterable[Exemplar] | None = None,
    instructions: str = INSTRUCTIONS,
    *,
    notes: Sequence[str] = (),
    mark: Callable[[str, str], str] | None = None,
) -> str:
    """Build the text-protocol prompt: instructions, tools in English, exemplars, the question.

    Returns a string ending in ``"Question: ...\\nThought:"``: the model continues the
    thought. (The paper's prompts end the same way, with the label of the next thought.)
    ``exemplars`` defaults to the first of :data:`EXEMPLARS`. ``notes`` are lines added
    after the instructions and ``mark`` rewrites the exemplars' observations (see
    :meth:`Exemplar.render`): the loop fills both from its guards. ``tools`` are
    :class:`react_lab.tools.Tool` objects, or a dict of them by name.
    """
    tools = list(tools.values() if isinstance(tools, Mapping) else tools)  # a dict, or a list
    exemplars = list(EXEMPLARS[:1] if exemplars is None else exemplars)
    odd = [t for t in tools if not hasattr(t, "usage")] + [
        e for e in exemplars if not isinstance(e, Exemplar)
    ]
    if odd or not isinstance(instructions, str):
        what = odd[0] if odd else instructions
        raise TypeError(
            f"build_prompt takes Tool objects (react_lab.tools.default_tools()), Exemplar "
            f"objects and instructions as a string; got {type(what).__name__} {what!r:.40}"
        )
    # One line per tool with an example call from its schema's ``examples``: without it the
    # smallest model copies parameter names (``get_payments[invoice_id]``) as arguments.
    described = "\n".join(f"  {t.usage} - {t.description} Example: {t.example}" for t in tools)
    parts = ["\n".join([instructions, *notes]), "", "Available tools:", described]
    for i, ex in enumerate(exemplars, 1):
        parts += ["", "Example:" if len(exemplars) == 1 else f"Example {i}:", ex.render(mark)]
    parts += ["", f"Question: {question}", f"{THOUGHT}:"]
    return "\n".join(parts)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ParseResult:
    """What the parser made of one completion.

    ``kind`` is ``"action"`` (``tool`` and ``input`` set), ``"final"`` (``answer`` set) or
    ``"error"`` (``reason`` set, written so the model can act on it). ``input`` is a string,
    a dict when the model wrote a JSON / Python-literal object, or a list of the values of a
    call written with positional arguments (``pair("Smith, John", 2)``). ``forged`` is True when the
    model wrote its own ``Observation`` line (dropped). ``kept`` is the part of the completion
    that belongs in the transcript. ``reasoning`` is what the completion held in reasoning
    blocks (``<think>...</think>``, Harmony's analysis channel), set aside before the labels
    were read: never run, never the answer (None when there were none).
    """

    kind: str
    tool: str | None = None
    input: Any = None
    answer: str | None = None
    reason: str | None = None
    thought: str | None = None
    forged: bool = False
    dialect: str | None = None
    kept: str = ""
    reasoning: str | None = None

    @property
    def args(self) -> list[str] | dict:
        """Arguments to dispatch: a dict or a list as is, text split on commas (as the classic
        loop does), except a comma inside a quoted value: ``"Smith, John", 2`` is two."""
        if isinstance(self.input, (dict, list)):
            return self.input
        if self.input is None or str(self.input).strip() == "":
            return []
        return [unquoted(a) for a in split_arguments(str(self.input))]  # ["cus_8812", "2026-01-01"]


#: One argument of ``tool[a, b]``: a quoted value (its commas inside it), or text up to a comma.
_ARGUMENT = re.compile(
    r"""[ \t]*(?:"[^"\n]*"|'[^'\n]*'|\u201c[^\u201d\n]*\u201d)[ \t]*(?=,|$)|[^,]*"""
)


def split_arguments(text: str) -> list[str]:
    """``text`` split on its commas, except a comma inside a quoted value."""
    items, pos = [], 0
    while True:
        item = _ARGUMENT.match(text, pos)
        items.append(item.group())
        pos = item.end() + 1  # past the comma
        if pos > len(text):
            return items


def unknown_tool_message(name: str, available: Iterable[str]) -> str:
    """The one wording for a call to a tool that does not exist.

    A long name is cut: the message stays one short line.
    """
    names = list(available)
    if not names:
        return f"unknown tool {shown(name, 120)}; no tools are available"
    return f"unknown tool {shown(name, 120)}; available: {', '.join(names)}"


#: Every character ``str.splitlines()`` ends a line at.
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_LINE_BREAK_RUN = re.compile(f"[{LINE_BREAKS}]+")


def clip(text: str, limit: int = 80, *, one_line: bool = False) -> str:
    """``text`` cut to ``limit`` characters, ``...`` marking the cut.

    What the model reads stays short. With ``one_line``, each run of line breaks
    (:data:`LINE_BREAKS`) is first written as one space, so a message (an error the model reads, a
    reason in a log) fits on one line. The package's one text-shortening helper; :func:`shown`
    quotes a value with it.
    """
    if one_line:
        text = _LINE_BREAK_RUN.sub(" ", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: Opening quote -> its closing quote, straight and typographic.
QUOTE_PAIRS = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}


def unquoted(text: str) -> str:
    """``text`` trimmed, without one pair of quotes wrapping the whole of it.

    ``'"a b"'`` is ``"a b"``.
    """
    text = text.strip()
    close = QUOTE_PAIRS.get(text[:1]) if len(text) >= 2 else None
    return text[1:-1].strip() if close and text[-1] == close and close not in text[1:-1] else text


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` clipped to ``limit`` characters, its last (closing) character kept."""
    text = repr(value)
    return clip(text[:-1], limit - 1) + text[-1]


# --------------------------------------------------------------------------- blank text

#: Unicode categories that draw nothing: controls, format characters (zero-width space and
#: joiners, BOM, bidi marks), separators, unassigned, and combining marks with no base.
_INVISIBLE_CATEGORIES = {"Cc", "Cf", "Cn", "Co", "Cs", "Zs", "Zl", "Zp", "Mn", "Me"}
#: Letters and symbols that are drawn blank (Hangul fillers, the braille blank).
_BLANK_GLYPHS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def visible(text: str) -> bool:
    """True if ``text`` holds at least one character that draws something.

    Whitespace, zero-width spaces and joiners, the BOM, other format and control
    characters, lone combining marks and blank glyphs (:data:`_BLANK_GLYPHS`) do not.
    Linear; stops at the first visible character.
    """
    return any(
        ch not in _BLANK_GLYPHS and unicodedata.category(ch) not in _INVISIBLE_CATEGORIES
        for ch in text
    )
