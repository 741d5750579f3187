"""A call written into an answer, in any shape: what makes an answer no answer.

An answer is text for the user. A call in it is a call nobody ran, and the user would read
markup instead of a result, so :func:`call_in_answer` finds one in every shape models write:

- a call another reader knows: markup or a JSON call with arguments
  (:func:`react_lab._parsing.leaks.find_leaks`), a line that is only a call
  (:func:`react_lab._parsing.other.bare_call`), an Action label before a call mid-line;
- a call that stands alone on its line: at the line start, after a label of up to eight words
  in any language (``Acción: get_charge[ch_1]``, ``行动：get_charge[ch_1]``, ``Source:
  get_charge(ch_1)``, ``Let me check the charge: get_charge("ch_1")``) or after a sentence
  (``Let me check. get_charge(charge_id="ch_1")``), with nothing but punctuation or a code
  comment after it; brackets, quotes or backticks around the name too;
- a call written as code: assigned or awaited (``x = get_charge(...)``, ``await
  get_charge(...)``), after ``call:`` (Gemma's markup with its markers stripped), ``>>>`` or
  ``@`` (with the agent's tool names, only a declared tool's: ``You can return item(s)`` is
  prose); a declared tool's call with code arguments (a quoted string, ``key=value``, an
  object) that ends its line, announced after any words (``Calling get_charge("ch_1")...``,
  ``Sure, get_charge(charge_id="ch_1")``);
- an object that names a tool and carries its arguments, however it is spelled: keys
  without quotes (``{name: "get_charge", arguments: {...}}``), ``=`` for ``:``, the call
  nested in a wrapper (``{"tool_uses": [{"recipient_name": "functions.get_charge",
  "parameters": {...}}]}``);
- a tag that holds a call (``<call>get_charge("ch_1")</call>``, ``<call name="...">``);
- with the agent's tool names: a declared tool named by an object's name key, with its
  arguments (``{"tool": "get_charge", "charge_id": "ch_1"}`` as all the answer) or as its
  key; glued to an object (``get_charge{...}``, ``get_charge: {...}``, ``get_charge =>
  {...}``); as a command (``/get_charge ch_1``, ``$ get_charge``, ``get_charge --charge-id
  ch_1``, ``get_charge ch_1`` alone on a line); as all the answer is; as a tag or a tag's
  content; after a tool label (``Tool: get_charge``, ``✿FUNCTION✿: get_charge``); alone on a
  line with its arguments on the next (``get_charge`` then ``{...}`` or ``Args: ...``); in a
  fenced block, as written, as a call or a command.

Before looking, the text is read as a model's markup would be: full-width brackets and
colons as ASCII, no-break spaces as spaces, zero-width characters and blockquote marks
dropped, and an answer that is one quoted string (``"get_charge(\\"ch_1\\")"``, JSON
written twice) read inside its quotes too.

What stays an answer: prose that mentions a tool or cites a call mid-sentence, in backticks
or not (``I could not search (the database was empty)``, ``The total is 258, from calc(129 *
2).``, ``I called `get_charge("ch_1")` and it says card_declined.``, ``Per search("refund
policy"): 60 days.``, ``Yes (see find_invoice("INV-2041")).``), a word before a parenthesis
(``Status: declined("card_declined")`` when ``declined`` is no tool), a tool and its result
echoed (``calc: 258``). Every check is one regex pass or a bounded number of reads, so the
whole stays linear in the length of the answer.
"""

from __future__ import annotations

import html
import json
import re
from functools import lru_cache
from itertools import islice
from typing import Any, Iterable

from .brackets import find_brackets
from .calls import INPUT_KEYS, load_object, norm_key
from .formats import relaxed_object
from .labels import COLON, FULL_WIDTH, NAME, end_of_line
from .leaks import find_leaks
from .other import bare_call

#: Most objects, tags, code spans and tool-name places looked at in one answer: it bounds
#: the work.
MAX_LOOKS = 16

#: What is read before looking: no-break spaces as spaces, zero-width characters dropped.
_SPACES = {0x00A0: " ", 0x202F: " ", 0x2007: " "}
_INVISIBLE = dict.fromkeys([0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD])
_QUOTE_MARK = re.compile(r"^[ \t]*>[ \t]?", re.MULTILINE)
#: Markdown's escapes of the characters a call is written with: ``get\_charge``, ``\[``.
_MARKDOWN_ESCAPE = re.compile(r"\\([_*\[\](){}`#])")
#: A call spelled through an object: ``functions.get_charge(`` (OpenAI's namespace), LangChain's
#: ``get_charge.invoke(``, ``.run(``, ``.call(``: read as ``get_charge(``.
_CALL_SPELLING = re.compile(
    r"(?<![\w.])(?:functions\.)?([^\W\d]\w*)(?:\.(?:invoke|ainvoke|run|arun|call))?\("
)
#: HTML's code tags, read as markdown's: ``<code>`` as a backtick, ``<pre>`` as a fence.
_HTML_CODE = re.compile(r"</?(code|pre)(?:[ \t][^<>\n]{0,40})?>", re.IGNORECASE)
#: An Action label mid-line followed by a call: ``Declined. Action: get_charge[ch_1]``.
_INLINE_ACTION = re.compile(
    r"\bAction[ \t*]*"
    + COLON
    + r"[ \t*`]*("
    + NAME
    + r")(?:[\[(]|[ \t]*\n[ \t]*Action[ \t]*Input)",
    re.I,
)
#: Where a call stands alone: a line start (list and quote marks, a label of up to three
#: words in any script), or a sentence's end; then the name, with brackets or quotes around it.
_STANDING = (
    r"(?:^[ \t>*_#+\u2022-]*(?:\d{1,3}[.)][ \t]+)?"
    r"(?:(?:->|=>|[\u2192\u21d2\u2794\u279c\u25b6\u25ba])[ \t]*"  # an arrow: -> get_charge(...)
    r"|(?i:step|stage)[ \t]*\d{0,3}[ \t]*[-\u2013\u2014.)][ \t]*)?"  # Step 1 - get_charge(...)
    r"(?:[^\s:\uff1a]{1,30}(?:[ \t][^\s:\uff1a]{1,30}){0,7}[ \t*]*" + COLON + r"[ \t*`\"']*)?"
    r"|[.!?][ \t]+)[\[\"'`*<\u27e8]*"
)
_STANDING_CALL = re.compile(
    _STANDING + r"(" + NAME + r")[\]\"'`*>\u27e9]*[ \t]?[\[({]", re.MULTILINE
)
#: A call that opens its line (list and quote marks before it): ``get_charge[ch_1] please``;
#: in backticks it is cited, as code (``\`get_charge("ch_1")\` returned declined``).
_OPENING_CALL = re.compile(
    r"^[ \t>*_#+\u2022-]*(?:\d{1,3}[.)][ \t]+)?[\[\"'*<]*(" + NAME + r")[\]\"'*>]*[ \t]?[\[(]",
    re.MULTILINE,
)
#: A label that cites where an answer came from: the calls after it are sources, not calls.
_CITING = re.compile(
    r"[ \t>*_#-]*(?:sources?|references?|refs?|citations?|evidence|via|see(?:[ \t]+also)?)"
    r"[ \t*]*" + COLON,
    re.IGNORECASE,
)
#: A call written as code: after ``=``, ``await``, ``return``, ``call:``, ``>>>`` or ``@``,
#: the name glued to its opening bracket.
_CODE_CALL = re.compile(
    r"(?:(?<![=!<>])=|\bawait[ \t]|\breturn[ \t]|\bcall[ \t]*:|>>>|(?<!\w)@)[ \t]*("
    + NAME
    + r")[\[({]",
    re.IGNORECASE,
)
#: A name glued to its parenthesis.
_GLUED_CALL = re.compile(r"(?<![\w.])(" + NAME + r")\(")
#: A code span's call: the name (after an assignment or ``await``), glued to its bracket.
_SPAN_CALL = re.compile(
    r"[ \t]*(?:[\w.]+[ \t]*=[ \t]*)?(?:await[ \t]+)?(" + NAME + r")[\[({]", re.IGNORECASE
)
#: A call's name and arguments in an object written with ``=`` (a Java or Kotlin map printed):
#: ``{name=get_charge, arguments={charge_id=ch_1}}``.
_EQUALS_OBJECT = re.compile(
    r"\{[ \t]*(?:tool_?name|function_?name|name|tool|function|action)[ \t]*=[ \t]*("
    + NAME
    + r")[ \t]*,[ \t]*(?:arguments|args|parameters|params|input|kwargs)[ \t]*=",
    re.IGNORECASE,
)
#: A tag whose name says it holds a call: ``<call>``, ``<tool>``, ``<tool_use>``, ``<action>``.
_CALL_TAG = re.compile(
    r"<(?:call|calls|tool|tools|tool_use|tool_code|use_tool|function|functions|function_call"
    r"|invoke|api_call|action|actions)(?=[\s>/])([^<>\n]{0,80})>",
    re.IGNORECASE,
)
#: A tag's attribute that names the tool: ``name="get_charge"``.
_NAME_ATTRIBUTE = re.compile(r"\b(?:name|tool|function)[ \t]*=[ \t]*[\"']?(" + NAME + ")")
#: Another call after one, on its line: ``, find_invoice(`` or ``; find_invoice[``.
_NEXT_CALL = re.compile(r"[`*\"']*[ \t]*[,;][ \t]*[`*\"']*" + NAME + r"[\[(]")
#: A code comment at the end of a line: ``# ...``, ``// ...``, ``-- ...``, ``<!-- ... -->``.
_COMMENT = re.compile(r"[ \t]+(?:#|//|--|<!--).*$")
#: The keys a call object carries its arguments under, as :func:`norm_key` writes them.
_INPUT_NORMS = {norm_key(k) for k in INPUT_KEYS}
#: A key of a call object that holds the tool's name (compared as :func:`norm_key` writes it).
_NAME_KEY = re.compile(r"name|tool|func|action|recipient|method|command|call")
#: A string that is a call: ``"get_charge(ch_1)"``, ``"get_charge[ch_1]"``.
_CALL_STRING = re.compile(
    r"[ \t]*(?:functions\.)?(" + NAME + r")[ \t]?(?:\(.*\)|\[.*\])[ \t]*", re.S
)
#: What an argument looks like when it stands alone after a tool name: a digit, ``_``, ``-``,
#: a quote or ``=`` in it (``ch_1``, ``INV-2041``, ``"x"``, ``k=v``), not a plain word.
_ARGUMENT = re.compile(r"\S*[\d_\-\"'=]\S*")
#: Arguments written as ``key=value`` pairs: ``customer_id=cus_4417 since=2026-07-01``.
_KEY_VALUES = re.compile(r"(?:\w+=(?:\"[^\"\n]*\"|'[^'\n]*'|\S+)[ \t]*)+")
#: A line that gives a call's arguments: an object, or an arguments label.
_ARGUMENTS_LINE = re.compile(
    r"[ \t>*`]*(?:\{|[^\s:]{0,3}(?:action[ \t]+)?(?:input|args|arguments|params|parameters)"
    r"[^\s:]{0,3}[ \t]*" + COLON + r")",
    re.IGNORECASE,
)


def call_in_answer(answer: str, tools: Iterable[str] | None = None) -> str | None:
    """The tool name of a call written in ``answer``, or None when it holds none.

    ``tools``: the agent's tool names, which let the shapes of the module's last list count;
    or each name mapped to its parameters, which lets an answer that is only a tool's
    arguments count too (:func:`arguments_of`).
    """
    names = tuple(t for t in tools or () if isinstance(t, str) and t.strip())
    for text in _readings(answer):
        lost = lost_call(text, tools)  # {"charge_id": "ch_1"}: a call whose name was lost
        if lost is not None:
            return lost
        for find in (_known_call, _standing_call, _code_call, _object_call, _tagged_call):
            name = find(text, names)
            if name is not None:
                return name
        name = _declared_call(text, names) if names else None
        if name is not None:
            return name
    return None


#: A JSON value in a fence: what a model writes around a record or a call.
_FENCED_JSON = re.compile(r"```(?:json)?[ \t]*\n(.*)\n[ \t]*```", re.DOTALL)


def json_value(text: str) -> Any:
    """``text`` as one JSON object or array (a fence around it dropped), or None."""
    body = text.strip()
    fence = _FENCED_JSON.fullmatch(body)
    body = fence.group(1).strip() if fence else body
    return load_object(body) if body[:1] in "{[" else None


def arguments_of(value: Any, tools: Any) -> str | None:
    """The declared tool whose arguments ``value`` is, or None: an object (or a list of
    objects) whose keys are all that tool's parameters, ``{"invoice_id": "INV-2041"}`` -- a
    call whose name was lost, not a record (every tool it fits, joined by "or"). ``tools`` maps
    each name to its parameters (names alone: None)."""
    if not isinstance(tools, dict):
        return None
    objects = [value] if isinstance(value, dict) else value if isinstance(value, list) else []
    for item in objects[:MAX_LOOKS]:
        if not isinstance(item, dict) or not item:
            continue
        fits = [
            name
            for name, params in tools.items()
            if isinstance(params, (dict, list, tuple, set)) and set(item) <= set(params)
        ]
        if fits:  # {"invoice_id": ...} fits find_invoice and get_payments: both named
            return " or ".join(fits[:3])
    return None


def lost_call(text: str, tools: Any) -> str | None:
    """The declared tool whose arguments an object in ``text`` is (:func:`arguments_of`): all
    of the text, or an object in it. None without the tools' parameters."""
    if not isinstance(tools, dict):
        return None
    whole = arguments_of(json_value(text), tools)
    if whole is not None:
        return whole
    for brace in islice(re.finditer(r"\{", text), MAX_LOOKS):
        read = relaxed_object(text, brace.start())
        name = arguments_of(read[0], tools) if read is not None else None
        if name is not None:
            return name
    return None


@lru_cache(maxsize=64)
def _lowered(names: tuple[str, ...]) -> frozenset[str]:
    """The declared tool names in lower case: a tool name is matched in any case."""
    return frozenset(n.lower() for n in names)


def _readings(answer: str) -> list[str]:
    """``answer`` as a model's markup is read, and, when it is one quoted string, its inside."""
    text = answer.translate(FULL_WIDTH).translate(_SPACES).translate(_INVISIBLE)
    text = _QUOTE_MARK.sub("", text)
    text = html.unescape(text) if "&" in text else text  # &lt;tool_call&gt;: escaped markup
    text = _MARKDOWN_ESCAPE.sub(r"\1", text)  # get\_charge: markdown's escaped underscore
    text = _CALL_SPELLING.sub(r"\1(", text)  # functions.get_charge(, get_charge.invoke(
    text = _HTML_CODE.sub(lambda m: "```" if m.group(1).lower() == "pre" else "`", text)
    readings = [text]
    inner = text.strip()
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "\"'":
        try:
            decoded = json.loads(inner)  # a call written as a JSON string: JSON written twice
        except ValueError:
            decoded = inner[1:-1]
        if isinstance(decoded, str):
            readings.append(decoded)
    return readings


def _known_call(text: str, names: tuple[str, ...]) -> str | None:
    """A call the other readers know: leaked markup or JSON with arguments, a line that is
    only a call, an Action label before a call mid-line."""
    for leak in find_leaks(text):
        if leak.call["function"]["arguments"] not in ('""', "{}"):
            return leak.call["function"]["name"]
    call = bare_call(text, list(names) or None)
    if call is not None:
        return call[2].tool
    line = _INLINE_ACTION.search(text)
    return line.group(1) if line is not None else None


def _standing_call(text: str, names: tuple[str, ...]) -> str | None:
    """A call that stands alone on its line: at its start, after a label or a sentence, with
    nothing but punctuation after it; with ``names``, only a declared tool's, and one that
    opens its line whatever follows it (``find_invoice[INV-2291] is not paid``). A label that
    cites (``Sources: get_charge(ch_1)``) is prose."""
    for m in islice(_STANDING_CALL.finditer(text), MAX_LOOKS):
        name = m.group(1)
        if names and name.lower() not in _lowered(names):
            continue
        if _CITING.match(text, text.rfind("\n", 0, m.start()) + 1):
            continue  # "Sources: get_charge(ch_1), get_payments(INV-2041)": citations
        if _closes(text, m.end() - 1, ends_line=True):
            return name
    for m in islice(_OPENING_CALL.finditer(text), MAX_LOOKS) if names else ():
        if m.group(1).lower() in _lowered(names) and _closes(text, m.end() - 1):
            return m.group(1)
    return None


def _code_call(text: str, names: tuple[str, ...]) -> str | None:
    """A call written as code (assigned, awaited, after ``call:``, ``>>>`` or ``@``; with
    ``names``, only a declared tool's), or a declared tool's call with code arguments that
    ends its line, announced rather than cited (:func:`_announced`)."""
    declared = _lowered(names)
    for m in islice(_CODE_CALL.finditer(text), MAX_LOOKS):
        if names and m.group(1).lower() not in declared:
            continue  # "You can return item(s)", "Total = sum(129, 129)": prose
        if _closes(text, m.end() - 1):
            return m.group(1)
    for m in islice(_GLUED_CALL.finditer(text), MAX_LOOKS):  # "Calling get_charge("ch_1")..."
        if m.group(1).lower() in declared and _announced(text, m):
            return m.group(1)
    return None


def _announced(text: str, m: re.Match) -> bool:
    """True if the call at ``m`` has code arguments and ends its line outside any parenthesis:
    ``Sure, get_charge("ch_1")``, ``Calling get_charge(charge_id="ch_1")...``; not ``I called
    get_charge("ch_1") and it says declined`` nor ``Yes (see get_charge("ch_1")).``."""
    start = text.rfind("\n", 0, m.start()) + 1
    before = text[start : m.start()]
    if before.count("(") > before.count(")") or not _code_arguments(text, m.end() - 1):
        return False
    return _closes(text, m.end() - 1, ends_line=True)


def _code_arguments(text: str, opener: int) -> bool:
    """True if the parenthesis at ``opener`` closes and holds code: a quoted string,
    ``key=value`` or an object (``get_charge("ch_1")``, not ``calc(129 * 2)``)."""
    close = find_brackets(text, opener, limit=1, pair="()")[0][1]
    if close is None:
        return False
    return re.search(r"[\"'{]|\w[ \t]*=(?!=)", text[opener:close]) is not None


def _object_call(text: str, names: tuple[str, ...]) -> str | None:
    """An object, however spelled, that names a tool and carries its arguments, at any depth."""
    m = _EQUALS_OBJECT.search(text)
    if m is not None:
        return m.group(1)
    bare = text.strip().strip("`").removeprefix("json").strip()  # the answer, fences off
    for brace in islice(re.finditer(r"\{", text), MAX_LOOKS):
        read = relaxed_object(text, brace.start())
        if read is None:
            continue
        whole = text[brace.start() : read[1]] == bare  # the object is all the answer
        name = _named_call(read[0], names, whole)
        if name is not None:
            return name
    return None


def _named_call(
    value: Any, names: tuple[str, ...], whole: bool = False, depth: int = 0
) -> str | None:
    """The tool named by a call object inside ``value`` (a dict or a list, three deep), or None.

    A call object has an identifier under a key that names a tool (``name``, ``tool``,
    ``recipient_name``, ...) and an arguments key (``arguments``, ``parameters``, ...); or,
    with ``names``, a declared tool as a key (``{"get_charge": {...}}``) or under such a key
    beside other keys (its arguments, written flat), or alone when the object is ``whole``,
    all the answer (``{"name": "get_charge"}``; ``The call {"action": "search"} was not
    needed`` mentions one).
    """
    if isinstance(value, dict):
        declared = _lowered(names)
        carries = any(norm_key(key) in _INPUT_NORMS for key in value)
        flat = carries or whole
        for key, inner in value.items():
            if isinstance(key, str) and key.lower() in declared:
                return key
            if not (_NAME_KEY.search(norm_key(key)) and isinstance(inner, str)):
                continue
            named = inner.strip().removeprefix("functions.")
            if (flat and named.lower() in declared) or (carries and re.fullmatch(NAME, named)):
                return named
            written = _CALL_STRING.fullmatch(inner)  # {"call": "get_charge(ch_1)"}
            if written is not None and (not names or written.group(1).lower() in declared):
                return written.group(1)
        inside = list(value.values())
    elif isinstance(value, list):
        inside = value
    else:
        return None
    for inner in inside[:MAX_LOOKS] if depth < 3 else ():
        name = _named_call(inner, names, False, depth + 1)
        if name is not None:
            return name
    return None


def _tagged_call(text: str, names: tuple[str, ...]) -> str | None:
    """A tag that says it holds a call (``<call>``, ``<tool>``), with a call inside it, a
    tool named in its attributes, or a declared tool as all it holds."""
    declared = _lowered(names)
    for m in islice(_CALL_TAG.finditer(text), MAX_LOOKS):
        attribute = _NAME_ATTRIBUTE.search(m.group(1))
        if attribute is not None:
            return attribute.group(1)
        inside = text[m.end() : m.end() + 2000]
        call = _SPAN_CALL.match(inside)
        if call is not None and _closes(inside, call.end() - 1):
            return call.group(1)
        word = re.match(r"[ \t\n]*(" + NAME + r")[ \t\n]*<", inside)
        if word is not None and word.group(1).lower() in declared:
            return word.group(1)
        name = _object_call(inside, names)
        if name is not None:
            return name
    return None


@lru_cache(maxsize=64)
def _declared_patterns(names: tuple[str, ...]) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """The regexes of a declared tool written as a call: where its name stands, after a tool
    label (``Tool: get_charge``), and as a word (in a code block)."""
    tool = "(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + ")"
    spelled = re.compile(
        r"(?P<lead>^[ \t>*`]*(?P<cmd>[/$!@][ \t]*)?|<[ \t]*)?(?<![\w.])(?:functions\.)?(?P<name>"
        + tool
        + r")(?::\d{1,3}(?!\w))?(?!\w)(?P<after>[ \t]*(?:=>|->|:|=)?[ \t]*)",  # Kimi's :0
        re.IGNORECASE | re.MULTILINE,
    )
    labelled = re.compile(
        r"^[ \t>*_#-]*[^\w\s]{0,3}(?:tool|function|call|command|use|name)\w*"
        r"(?:[ \t]+(?:name|call))?[^\w\s:]{0,3}[ \t*]*"
        + COLON
        + r"[ \t*`\"']*("
        + tool
        + r")[ \t*`\"'.]*$",
        re.IGNORECASE | re.MULTILINE,
    )
    word = re.compile(  # in a code block: get_charge(...), get_charge ch_1 (as written)
        r"(?<![\w.])" + tool + r"(?=[ \t]*[\[({]|[ \t]+[^\s]*[\d_\"'=-])"
    )
    return spelled, labelled, word


def _declared_call(text: str, names: tuple[str, ...]) -> str | None:
    """A declared tool written as a call, however it is spelled (the module's last list)."""
    spelled, labelled, word = _declared_patterns(names)
    alone = text.strip(" \t\n`*\"'.")
    if alone in names:  # the answer is a tool's name: "get_charge" (its input on a later line)
        return alone
    for m in islice(spelled.finditer(text), MAX_LOOKS):
        name, end, lead = m.group("name"), m.end(), m.group("lead")
        sign, opener = m.group("after").strip(), text[end : end + 1]
        if opener == "{" and _closes(text, end):  # get_charge{...}, get_charge: {...}
            return name
        if opener == "(" and sign in ("=>", "->") and _closes(text, end):  # get_charge => (...)
            return name
        if lead is not None and lead.startswith("<"):  # <get_charge charge_id="ch_1"/>
            return name
        if (
            lead is not None
            and sign in ("", "=>", "->")
            and _command(text, end, bool(m.group("cmd")))
        ):
            return name  # /get_charge ch_1, get_charge --charge-id ch_1, get_charge -> ch_1
        if lead is not None and not sign and _arguments_below(text, end):
            return name  # get_charge, then {...} or "Args: ..." on the next line
    label = labelled.search(text)
    if label is not None:
        return label.group(1)
    for start, stop in islice(_fenced_blocks(text), MAX_LOOKS):  # a code block naming a tool
        found = word.search(text, start, stop)
        if found is not None:
            return found.group()
    return None


def _fenced_blocks(text: str):
    """The bodies of the fenced blocks in ``text``, as ``(start, end)``: one pass over it."""
    pos = text.find("```")
    while pos >= 0:
        close = text.find("```", pos + 3)
        if close < 0:
            return
        yield pos + 3, close
        pos = text.find("```", close + 3)


def _closes(text: str, opener: int, ends_line: bool = False, depth: int = 0) -> bool:
    """True if the bracket at ``opener`` is closed (and, if ``ends_line``, ends its line, or
    another call follows after a comma or a semicolon and does: calls made side by side)."""
    pair = {"[": "[]", "(": "()", "{": "{}"}.get(text[opener : opener + 1])
    if pair is None:
        return False
    close = find_brackets(text, opener, limit=1, pair=pair, quotes=pair != "[]")[0][1]
    if close is None:
        return False
    tail = text[close : end_of_line(text, close)]
    tail = _COMMENT.sub("", tail)  # "get_charge("ch_1")  # fetch it": a comment is no prose
    if not ends_line or not tail.strip(" \t`*\"'.;\u2026]"):
        return True
    after = _NEXT_CALL.match(text, close)  # get_charge("ch_1"), find_invoice("INV-2041")
    return after is not None and depth < 8 and _closes(text, after.end() - 1, True, depth + 1)


def _command(text: str, end: int, marked: bool) -> bool:
    """True if a tool name at a line start is a command: ``/get_charge ch_1``, ``$ get_charge``,
    the tool and flags (``get_charge --charge-id ch_1``), the tool and ``key=value`` pairs
    (``search query="late fee"``), or the tool and one argument that is not a plain word alone
    on the line (``get_charge ch_1``)."""
    if marked:
        return True
    rest = text[end : end_of_line(text, end)].strip(" \t`*")
    return (
        rest.startswith("--")
        or _ARGUMENT.fullmatch(rest) is not None
        or _KEY_VALUES.fullmatch(rest) is not None
    )


def _arguments_below(text: str, end: int) -> bool:
    """True if a tool name ends its line and the next line gives arguments (an object, or an
    ``Args:``/``Input:`` label)."""
    line_end = text.find("\n", end)
    if line_end < 0 or text[end:line_end].strip(" \t`*"):
        return False
    return _ARGUMENTS_LINE.match(text, line_end + 1) is not None
