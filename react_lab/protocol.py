"""The ReAct text protocol: three labels, a prompt with exemplars, a stop sequence, a parser.

ReAct (Yao et al., 2022, "ReAct: Synergizing Reasoning and Acting in Language Models")
has the model write ``Thought:`` and ``Action: tool[input]`` lines into its own text.
The program, not the model, writes each ``Observation:`` line. Three pieces make
that work, and all three live here:

* the prompt, which teaches the format by example (the *exemplar*);
* :data:`STOP`, the stop sequence that cuts the completion before the model can
  write an observation of its own;
* the parser, which decides which characters are a tool call.

There are two parsers. :data:`ACTION_RE` with :func:`strict_parse` is the classic
loop's anchored regex, kept exactly as a teaching artifact. :func:`parse` is the
tolerant parser for real model text; it never raises.
"""
from __future__ import annotations

import ast
import itertools
import json
import re
from dataclasses import asdict, dataclass
from typing import Any, Iterable

THOUGHT, ACTION, OBSERVATION = "Thought", "Action", "Observation"
LABELS = (THOUGHT, ACTION, OBSERVATION)

#: Sent as ``stop=``: the provider ends the completion where an observation would begin
#: and leaves these characters out. Two forms, because models also write the label on
#: a new line with a step number ("Observation 2:").
STOP = ["Observation:", "\nObservation"]

#: The classic loop's action regex: ``^Action:`` anchored to a line start (MULTILINE),
#: a word-character tool name, everything inside the brackets as one string.
ACTION_RE = re.compile(r"^Action:\s*(\w+)\[(.*)\]\s*$", re.MULTILINE)

#: Words models write in place of a tool when they mean "no tool".
NO_TOOL_WORDS = {"none", "n/a", "na", "null", "no tool", "nothing", "-"}

#: Tool names that mean "finish with this answer" in the paper's bracket form.
FINISH_NAMES = {"finish", "final_answer", "final answer"}

_LABEL = r"^[ \t>*_#]*{name}[ \t]*(\d+)?[ \t]*\**[ \t]*:[ \t*]*"
_OBS_LINE = re.compile(r"^[ \t>*_#]*Observation\b[ \t]*\d*[ \t]*\**[ \t]*:", re.MULTILINE | re.IGNORECASE)
_ACTION_LINE = re.compile(_LABEL.format(name="Action"), re.MULTILINE | re.IGNORECASE)
_INPUT_LINE = re.compile(r"^[ \t>*_#]*Action[ \t]*(\d+)?[ \t]*Input[ \t]*\**[ \t]*:[ \t*]*",
                         re.MULTILINE | re.IGNORECASE)
_ANSWER_LINE = re.compile(r"^[ \t>*_#]*(?:Final[ \t]+)?Answer[ \t]*(\d+)?[ \t]*\**[ \t]*:[ \t*]*",
                          re.MULTILINE | re.IGNORECASE)
_THOUGHT_LINE = re.compile(_LABEL.format(name="Thought"), re.MULTILINE | re.IGNORECASE)
_ANY_LABEL = re.compile(r"^[ \t>*_#]*(?:Thought|Action|Observation|Question|(?:Final[ \t]+)?Answer)\b"
                        r"[ \t]*\d*[ \t]*(?:Input)?[ \t]*\**[ \t]*:", re.MULTILINE | re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*```[\w-]*[ \t]*$", re.MULTILINE)


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

    def render(self) -> str:
        """Render as protocol text, ``Question:`` line first."""
        lines = [f"Question: {self.question}"]
        for thought, action, observation in self.steps:
            lines += [f"{THOUGHT}: {thought}", f"{ACTION}: {action}", f"{OBSERVATION}: {observation}"]
        lines += [f"{THOUGHT}: {self.final_thought}", f"Answer: {self.answer}"]
        return "\n".join(lines)


#: Worked exchanges over the shipped database. Their observations are real tool output,
#: checked against the database by ``tests/test_protocol.py::test_exemplars_match_the_tools``.
EXEMPLARS: tuple[Exemplar, ...] = (
    Exemplar(
        question="When was the latest invoice of cus_4417 issued?",
        steps=(("I need the invoices of cus_4417, newest first.",
                "list_invoices[cus_4417, 2026-07-01]",
                '[{"invoice_id": "INV-2088", "issued": "2026-07-14", "due": "2026-07-14", "total": 4200.0, "status": "paid", "memo": "Enterprise plan, July 2026", "emailed_at": "2026-07-14T08:10:47", "charge_ids": ["ch_9nfKQD"]}]'),),
        final_thought="The newest invoice is INV-2088, issued on 2026-07-14.",
        answer="The latest invoice of cus_4417 is INV-2088, issued on 2026-07-14.",
    ),
    Exemplar(
        question="Has supplier invoice INV-2323 been paid?",
        steps=(("I should look at the invoice first.", "find_invoice[INV-2323]",
                '{"invoice_id": "INV-2323", "kind": "supplier", "supplier_id": "sup_106", "supplier_name": "Bluequill Payroll Services", "issued": "2026-07-25", "due": "2026-08-09", "total": 720.0, "status": "approved", "memo": "Payroll service, July 2026"}'),
               ("It is approved. Approved is not paid, so I check its payments.",
                "get_payments[INV-2323]", '{"invoice_id": "INV-2323", "payments": [], "scheduled": []}')),
        final_thought="There are no payments against INV-2323.",
        answer="No. INV-2323 (720.00 dollars) is approved but unpaid.",
    ),
    Exemplar(
        question="How long after a charge can a card payment be refunded?",
        steps=(("The help articles should state the refund window.", "search[refund policy]",
                '[{"article_id": "KB-01", "title": "Refund policy", "snippet": "Card payments can be refunded in full within 60 days of the charge. A refund returns the money to the original card in 5 to 10 business days and is recorded as a negative payment on the invoice."}, {"article_id": "KB-02", "title": "How to issue a refund", "snippet": "Find the succeeded charge for the invoice, check it was not already refunded, then refund that charge. Never refund an invoice that has no succeeded charge."}, {"article_id": "KB-03", "title": "Was a customer charged twice?", "snippet": "A real duplicate charge means two succeeded charges for the same invoice. Look up each charge id: failed charges and refunded charges did not take money. Refund only the second succeeded charge."}]'),),
        final_thought="The refund policy article gives the window.",
        answer="Card payments can be refunded in full within 60 days of the charge.",
    ),
)


def describe_tools(tools: Iterable[Any]) -> str:
    """One line per tool: ``  usage - description Example: call`` (``tools`` are :class:`react_lab.tools.Tool`).

    The example call comes from the schema's ``examples``; without it the smallest
    model copies parameter names (``get_payments[invoice_id]``) as arguments.
    """
    return "\n".join(f"  {t.usage} - {t.description} Example: {t.example}" for t in tools)


def build_prompt(question: str, tools: Iterable[Any], exemplars: Iterable[Exemplar] | None = None,
                 instructions: str = INSTRUCTIONS) -> str:
    """Build the text-protocol prompt: instructions, tools in English, exemplars, the question.

    Returns a string ending in ``"Question: ...\\nThought:"``: the model continues the
    thought. (The paper's prompts end the same way, with the label of the next thought.)
    ``exemplars`` defaults to the first of :data:`EXEMPLARS`.
    """
    exemplars = list(EXEMPLARS[:1] if exemplars is None else exemplars)
    parts = [instructions, "", "Available tools:", describe_tools(tools)]
    for i, ex in enumerate(exemplars, 1):
        parts += ["", "Example:" if len(exemplars) == 1 else f"Example {i}:", ex.render()]
    parts += ["", f"Question: {question}", f"{THOUGHT}:"]
    return "\n".join(parts)


# --------------------------------------------------------------------------- results

@dataclass(frozen=True)
class ParseResult:
    """What the parser made of one completion.

    ``kind`` is ``"action"`` (``tool`` and ``input`` set), ``"final"`` (``answer`` set)
    or ``"error"`` (``reason`` set, written so the model can act on it). ``input`` is
    a string, or a dict when the model wrote a JSON / Python-literal object.
    ``forged`` is True when the model wrote its own ``Observation`` line (dropped).
    ``kept`` is the part of the completion that belongs in the transcript.
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

    @property
    def args(self) -> list[str] | dict:
        """Arguments for dispatch: a dict as is, a string split on commas (as the classic loop does)."""
        if isinstance(self.input, dict):
            return self.input
        if self.input is None or str(self.input).strip() == "":
            return []
        return [a.strip() for a in str(self.input).split(",")]

    def to_dict(self) -> dict:
        """The CLI's shape: ``{"kind", "tool", "input", "answer", "reason"}``."""
        d = asdict(self)
        return {k: d[k] for k in ("kind", "tool", "input", "answer", "reason")}


def unknown_tool_message(name: str, available: Iterable[str]) -> str:
    """The one wording for a call to a tool that does not exist."""
    names = list(available)
    if not names:
        return f"unknown tool {name!r}; no tools are available"
    return f"unknown tool {name!r}; available: {', '.join(names)}"


# --------------------------------------------------------------------------- strict parser

def strict_parse(text: str) -> ParseResult:
    """Parse as the classic loop does: ``"Answer:" in text`` first, then :data:`ACTION_RE`.

    No tolerance at all: numbered labels, ``Action Input:`` lines, JSON and trailing
    text after ``]`` are all parse errors. Never raises.
    """
    text = text if isinstance(text, str) else str(text)
    if "Answer:" in text:
        return ParseResult("final", answer=text.split("Answer:", 1)[1].strip(), dialect="strict")
    match = ACTION_RE.search(text)
    if not match:
        return ParseResult("error", reason="Could not parse an action. Retry.", dialect="strict")
    return ParseResult("action", tool=match.group(1), input=match.group(2), dialect="strict")


# --------------------------------------------------------------------------- tolerant parser

def find_forged(text: str) -> int | None:
    """Index where a model-written ``Observation`` line starts, or None."""
    m = _OBS_LINE.search(text)
    return m.start() if m else None


def trim_partial_stop(text: str, word: str = OBSERVATION) -> str:
    """Drop a last line that is a cut-off start of ``word`` (``"\\nObserv"``), as servers leave it."""
    head, sep, last = text.rpartition("\n")
    frag = last.strip(" \t*")
    if sep and frag and word.lower().startswith(frag.lower()):
        return head
    return text


def parse(text: str, tools: Iterable[str] | None = None) -> ParseResult:
    """Parse real model text into an action, a final answer, or an error. Never raises.

    Tolerates: numbered labels (``Action 2:``), leading whitespace and markdown,
    trailing text after ``]``, a partial stop word at the end, blank lines between
    labels, three dialects (``tool[input]`` from the paper; ``Action: tool`` +
    ``Action Input: ...``; a JSON ``{"action", "action_input"}`` blob, fenced or not)
    and Python-literal dicts (``ast.literal_eval``, never ``eval``). Everything from a
    model-written ``Observation`` line on is dropped and ``forged`` is set. The first
    action or answer in the text wins. With ``tools``, a name not in the list is an error.
    """
    try:
        return _parse(text if isinstance(text, str) else str(text), tools)
    except Exception as exc:  # a parser must never take the loop down  # pragma: no cover
        return ParseResult("error", reason=f"could not read the completion ({type(exc).__name__}); "
                                           "write one line: Action: tool[input]")


def _parse(text: str, tools: Iterable[str] | None) -> ParseResult:
    tools = list(tools) if tools is not None else None
    text = text.replace("\r\n", "\n").replace("\x00", "")
    cut = find_forged(text)
    forged = cut is not None
    if forged:
        text = text[:cut]
    text = trim_partial_stop(text.rstrip()).rstrip()

    candidates = [c for c in (_find_action(text), _find_answer(text)) if c is not None]
    if not candidates:
        blob = _find_json_blob(text, 0)
        if blob is not None:
            candidates.append(blob)
    if not candidates:
        return ParseResult("error", forged=forged, kept=text, thought=_thought(text, len(text)),
                           reason="no action and no answer found; write one line "
                                  "'Action: tool_name[arguments]', or 'Answer: ...' when done")
    start, end, result = min(candidates, key=lambda c: c[0])
    kept = text[:end].rstrip()
    thought = _thought(text, start)
    if result.kind == "action":
        name = result.tool.strip()
        if name.lower() in FINISH_NAMES:
            answer = result.input if isinstance(result.input, str) else json.dumps(result.input)
            return ParseResult("final", answer=answer, thought=thought, forged=forged,
                               dialect=result.dialect, kept=kept)
        if name.lower().strip(".") in NO_TOOL_WORDS:
            return ParseResult("error", tool=name, thought=thought, forged=forged, dialect=result.dialect,
                               kept=kept, reason=f"{name!r} is not an available tool and no final-answer "
                               "label is present; ask for a listed tool or an 'Answer:'/'Final Answer:' line")
        if tools is not None and name not in tools:
            return ParseResult("error", tool=name, input=result.input, thought=thought, forged=forged,
                               dialect=result.dialect, kept=kept, reason=unknown_tool_message(name, tools))
        return ParseResult("action", tool=name, input=result.input, thought=thought, forged=forged,
                           dialect=result.dialect, kept=kept)
    return ParseResult(result.kind, answer=result.answer, thought=thought, forged=forged,
                       dialect=result.dialect, kept=kept)


def _find_action(text: str):
    """First ``Action:`` label in either text dialect, as ``(start, end, result)``."""
    for m in _ACTION_LINE.finditer(text):
        rest_start = m.end()
        line_end = text.find("\n", rest_start)
        line_end = len(text) if line_end < 0 else line_end
        rest = text[rest_start:line_end].strip()
        if not rest:
            # "Action:" alone on its line: a JSON blob below, or "Action Input" style name below.
            blob = _find_json_blob(text, rest_start)
            if blob is not None:
                return (m.start(), blob[1], blob[2])
            continue
        bracket = _bracket_call(text, rest_start, line_end)
        if bracket is not None:
            name, value, end = bracket
            return (m.start(), end, ParseResult("action", tool=name, input=_clean_input(value),
                                                dialect="brackets"))
        if rest.startswith("{"):
            blob = _find_json_blob(text, rest_start)
            if blob is not None:
                return (m.start(), blob[1], blob[2])
        name = rest.strip("`*\"' ")
        inp = _INPUT_LINE.search(text, line_end)
        if inp and not _ANY_LABEL.search(text[line_end:inp.start()].replace("Action Input", "")):
            value, end = _input_value(text, inp.end())
            return (m.start(), end, ParseResult("action", tool=name, input=value, dialect="action_input"))
        return (m.start(), line_end, ParseResult("action", tool=name, input="", dialect="action_input"))
    return None


def _bracket_call(text: str, start: int, line_end: int):
    """``name[args]`` on the line from ``start``: (name, args, end), brackets balanced; or None."""
    line = text[start:line_end]
    m = re.match(r"[ \t]*([^\[\]\n{}]*?)[ \t]*\[", line)
    if not m or not m.group(1).strip():
        return None
    name = m.group(1).strip("`*\"' ")
    depth = 0
    for i in range(m.end() - 1, len(line)):
        depth += {"[": 1, "]": -1}.get(line[i], 0)
        if depth == 0:
            return name, line[m.end():i], start + i + 1
    # Never closed on this line: the model was cut off mid-call; take the rest of the line.
    return name, line[m.end():], line_end


def _input_value(text: str, start: int):
    """The value after ``Action Input:``: a JSON/dict value by balance, else the rest of the line."""
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    rest = text[start:line_end].strip()
    if not rest or rest.startswith(("{", "```")):
        j = start
        # skip blank lines and fences to the value
        while True:
            m = re.match(r"[ \t]*(?:```[\w-]*)?[ \t]*\n", text[j:])
            if not m or m.end() == 0:
                break
            j += m.end()
        if text[j:].lstrip(" \t").startswith("{"):
            j = text.index("{", j)
            end = _balanced_end(text, j)
            if end is not None:
                return _clean_input(text[j:end]), end
        if not rest:
            nxt = text.find("\n", j)
            nxt = len(text) if nxt < 0 else nxt
            return _clean_input(text[j:nxt]), nxt
    return _clean_input(rest), line_end


def _balanced_end(text: str, start: int) -> int | None:
    """End index just past the ``{...}`` that opens at ``start``, respecting strings; None if unclosed."""
    depth, quote, escape = 0, None, False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _load_object(blob: str) -> Any:
    """JSON first, then a Python literal (``ast.literal_eval``, never ``eval``); None if neither."""
    for loader in (json.loads, ast.literal_eval):
        try:
            return loader(blob)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def _find_json_blob(text: str, start: int):
    """First ``{"action": ..., "action_input": ...}`` object at or after ``start`` (fences ignored)."""
    # Only the first few opening braces are tried: enough for any real completion, and it
    # keeps adversarial text ("{" * 50_000) linear instead of quadratic.
    for m in itertools.islice(re.finditer(r"\{", text[start:]), 16):
        j = start + m.start()
        end = _balanced_end(text, j)
        if end is None:
            continue
        obj = _load_object(text[j:end])
        if not isinstance(obj, dict):
            continue
        name = next((obj[k] for k in ("action", "tool", "name") if isinstance(obj.get(k), str)), None)
        if name is None:
            continue
        value = next((obj[k] for k in ("action_input", "tool_input", "arguments", "args", "input",
                                       "parameters") if k in obj), "")
        if isinstance(value, str) and value.strip().startswith("{"):
            loaded = _load_object(value)
            value = loaded if isinstance(loaded, dict) else value
        if name.strip().lower() in FINISH_NAMES:
            answer = value if isinstance(value, str) else json.dumps(value)
            return (j, end, ParseResult("final", answer=answer, dialect="json"))
        return (j, end, ParseResult("action", tool=name, input=value, dialect="json"))
    return None


def _find_answer(text: str):
    """First ``Answer:`` / ``Final Answer:`` label, as ``(start, end, result)``."""
    m = _ANSWER_LINE.search(text)
    if not m:
        return None
    answer = text[m.end():]
    nxt = _ANY_LABEL.search(answer)
    if nxt:
        answer = answer[:nxt.start()]
    return (m.start(), m.end() + len(answer), ParseResult("final", answer=answer.strip(), dialect="answer"))


def _clean_input(value: str) -> Any:
    """Trim, parse an object if it is one, strip one pair of quotes wrapping the whole input."""
    value = value.strip()
    if value.startswith("{") and value.endswith("}"):
        obj = _load_object(value)
        if isinstance(obj, dict):
            return obj
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`" and value[0] not in value[1:-1]:
        return value[1:-1].strip()
    return value


def _thought(text: str, upto: int) -> str | None:
    """The reasoning before position ``upto``: after the last ``Thought:`` label, else all of it."""
    head = text[:upto]
    labels = list(_THOUGHT_LINE.finditer(head))
    if labels:
        head = head[labels[-1].end():]
    head = re.sub(r"^Question:.*$", "", head, flags=re.MULTILINE)
    head = _FENCE.sub("", head).strip()
    return head or None
