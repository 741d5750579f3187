"""A call written into an answer, in any shape: what makes an answer no answer.

An answer is text for the user. A call in it is a call nobody ran, and the user would read
markup instead of a result, so :func:`call_in_answer` finds one in every shape models write:

- a call another model's reader knows: markup or a JSON call with arguments
  (:func:`react_lab._parsing.leaks.find_leaks`), a line that is only a call
  (:func:`react_lab._parsing.other.bare_call`), the paper's ``get_charge[ch_1]`` on a line
  of its own, a label before a call (``Action: get_charge[ch_1]`` mid-line, ``Acción:
  get_charge[ch_1]``, ``行动：get_charge[ch_1]``);
- a call written as code: in backticks, assigned or awaited (``x = get_charge(...)``,
  ``await get_charge(...)``), after ``call:`` (Gemma's markup with its markers stripped),
  ``>>>`` or ``@``;
- an object that names a tool and carries its arguments, however it is spelled: keys
  without quotes (``{name: "get_charge", arguments: {...}}``), ``=`` for ``:``
  (``{name=get_charge, arguments={...}}``), the call nested in a wrapper
  (``{"tool_uses": [{"recipient_name": "functions.get_charge", "parameters": {...}}]}``);
- a tag that holds a call (``<call>get_charge("ch_1")</call>``, ``<tool>...</tool>``);
- with the agent's tool names: a declared tool written as a call however it is spelled
  (``get_charge{...}``, ``get_charge: {...}``, ``get_charge => {...}``, ``/get_charge ch_1``,
  ``get_charge ch_1`` alone on a line, ``Tool: get_charge``, a fenced block that names it,
  ``<get_charge .../>``).

Full-width brackets and colons (``search［x］``, ``行动：``) read as their ASCII forms.
What stays an answer: prose that mentions a tool (``I could not search (the database was
empty)``, ``I need get_charge for that``) and a call mid-sentence whose argument is plain
text (``The total is 258, from calc(129 * 2).``); but a call with code arguments (a quoted
string, ``key=value``, an object) is a call wherever it stands (``Calling
get_charge("ch_1")...``). Every check is one regex pass or a bounded number of reads, so the
whole stays linear in the length of the answer.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import islice
from typing import Any, Iterable

from .brackets import find_brackets
from .calls import INPUT_KEYS, norm_key
from .formats import relaxed_object
from .labels import COLON, FULL_WIDTH, NAME
from .leaks import find_leaks
from .other import bare_call

#: Most objects, tags, code spans and tool-name places looked at in one answer: it bounds
#: the work.
MAX_LOOKS = 16

#: The paper's call on a line of its own: ``get_charge[ch_1]`` (quotes, markdown around).
_BRACKET_CALL_LINE = re.compile(
    r"^[ \t>*`\"']*(" + NAME + r")\[[^\]\n]*\][ \t`*\"'.]*$", re.MULTILINE
)
#: An Action label mid-line followed by a call: ``Declined. Action: get_charge[ch_1]``.
_INLINE_ACTION = re.compile(r"\bAction[ \t*]*" + COLON + r"[ \t*`]*(" + NAME + r")[\[(]", re.I)
#: A label of one to three words, in any language, before a call: ``Acción: get_charge[ch_1]``
#: at a line start or after a sentence (the call must end its line).
_LABELLED_CALL = re.compile(
    r"(?:^|[.!?][ \t]+)[ \t>*_#]*[^\W\d_]+(?:[ \t][^\W\d_]+){0,2}[ \t*]*"
    + COLON
    + r"[ \t*`\"']*("
    + NAME
    + r")[\[({]",
    re.MULTILINE,
)
#: A call written as code: after ``=``, ``await``, ``return``, ``call:``, ``>>>`` or ``@``,
#: the name glued to its opening bracket.
_CODE_CALL = re.compile(
    r"(?:(?<![=!<>])=|\bawait[ \t]|\breturn[ \t]|\bcall[ \t]*:|>>>|(?<!\w)@)[ \t]*("
    + NAME
    + r")[\[({]",
    re.IGNORECASE,
)
#: A name glued to its parenthesis, anywhere: a call when its arguments are code.
_GLUED_CALL = re.compile(r"(?<![\w.])(" + NAME + r")\(")
#: A code span, ```` `...` ````, on one line.
_CODE_SPAN = re.compile(r"`([^`\n]{1,2000})`")
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
#: A tag whose name says it holds a call: ``<call>``, ``<tool>``, ``<tool_use>``, ``<invoke>``.
_CALL_TAG = re.compile(
    r"<(?:call|calls|tool|tools|tool_use|tool_code|use_tool|function|functions|function_call"
    r"|invoke|api_call)(?=[\s>/])[^<>\n]{0,80}>",
    re.IGNORECASE,
)
#: The keys a call object carries its arguments under, as :func:`norm_key` writes them.
_INPUT_NORMS = {norm_key(k) for k in INPUT_KEYS}
#: A key of a call object that holds the tool's name (compared as :func:`norm_key` writes it).
_NAME_KEY = re.compile(r"name|tool|func|action|recipient")
#: What an argument looks like when it stands alone after a tool name: a digit, ``_``, ``-``,
#: a quote or ``=`` in it (``ch_1``, ``INV-2041``, ``"x"``, ``k=v``), not a plain word.
_ARGUMENT = re.compile(r"\S*[\d_\-\"'=]\S*")


def call_in_answer(answer: str, tools: Iterable[str] | None = None) -> str | None:
    """The tool name of a call written in ``answer``, or None when it holds none.

    ``tools``: the agent's tool names, which let the shapes of the module's last list count.
    """
    text = answer.translate(FULL_WIDTH)
    names = tuple(t for t in tools or () if isinstance(t, str) and t.strip())
    for find in (_known_call, _code_call, _object_call, _tagged_call):
        name = find(text, names)
        if name is not None:
            return name
    return _declared_call(text, names) if names else None


def _known_call(text: str, names: tuple[str, ...]) -> str | None:
    """A call the other readers know: leaked markup or JSON with arguments, a line that is
    only a call, the paper's call on a line of its own, a label before a call."""
    for leak in find_leaks(text):
        if leak.call["function"]["arguments"] not in ('""', "{}"):
            return leak.call["function"]["name"]
    call = bare_call(text, list(names) or None)
    if call is not None:
        return call[2].tool
    line = _BRACKET_CALL_LINE.search(text) or _INLINE_ACTION.search(text)
    if line is not None:
        return line.group(1)
    for m in islice(_LABELLED_CALL.finditer(text), MAX_LOOKS):
        if _closes(text, m.end() - 1, ends_line=True):
            return m.group(1)
    return None


def _code_call(text: str, names: tuple[str, ...]) -> str | None:
    """A call written as code: assigned, awaited, after ``call:``, ``>>>``, ``@``, in backticks,
    or anywhere with code arguments (:func:`_code_arguments`)."""
    for m in islice(_CODE_CALL.finditer(text), MAX_LOOKS):
        if _closes(text, m.end() - 1):
            return m.group(1)
    for m in islice(_GLUED_CALL.finditer(text), MAX_LOOKS):  # get_charge(charge_id="ch_1")
        if _code_arguments(text, m.end() - 1):
            return m.group(1)
    for span in islice(_CODE_SPAN.finditer(text), MAX_LOOKS):
        m = _SPAN_CALL.match(text, span.start(1), span.end(1))
        if m is not None and _closes(text, m.end() - 1):
            return m.group(1)
    return None


def _object_call(text: str, names: tuple[str, ...]) -> str | None:
    """An object, however spelled, that names a tool and carries its arguments, at any depth."""
    m = _EQUALS_OBJECT.search(text)
    if m is not None:
        return m.group(1)
    for brace in islice(re.finditer(r"\{", text), MAX_LOOKS):
        read = relaxed_object(text, brace.start())
        name = _named_call(read[0], names) if read is not None else None
        if name is not None:
            return name
    return None


def _named_call(value: Any, names: tuple[str, ...], depth: int = 0) -> str | None:
    """The tool named by a call object inside ``value`` (a dict or a list, three deep), or None.

    A call object has an identifier under a key that names a tool (``name``, ``tool``,
    ``recipient_name``, ...) and an arguments key (``arguments``, ``parameters``, ...); or,
    with ``names``, a declared tool as its key and its arguments as the value
    (``{"get_charge": {...}}``).
    """
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in names and isinstance(inner, dict):
                return key
        if any(norm_key(key) in _INPUT_NORMS for key in value):  # it carries arguments
            for key, inner in value.items():
                if _NAME_KEY.search(norm_key(key)) and isinstance(inner, str):
                    if re.fullmatch(NAME, inner.strip()):
                        return inner.strip()
        inside = list(value.values())
    elif isinstance(value, list):
        inside = value
    else:
        return None
    for inner in inside[:MAX_LOOKS] if depth < 3 else ():
        name = _named_call(inner, names, depth + 1)
        if name is not None:
            return name
    return None


def _tagged_call(text: str, names: tuple[str, ...]) -> str | None:
    """A tag that says it holds a call (``<call>``, ``<tool>``), with a call inside it."""
    for m in islice(_CALL_TAG.finditer(text), MAX_LOOKS):
        inside = text[m.end() : m.end() + 2000]
        call = _SPAN_CALL.match(inside)
        if call is not None and _closes(inside, call.end() - 1):
            return call.group(1)
        name = _object_call(inside, names)
        if name is not None:
            return name
    return None


@lru_cache(maxsize=64)
def _declared_patterns(names: tuple[str, ...]) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """The regexes of a declared tool written as a call: where its name stands, after a label
    (``Tool: get_charge``), and as a word in a code block."""
    tool = "(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + ")"
    spelled = re.compile(
        r"(?P<lead>^[ \t>*`]*(?P<cmd>[/$!][ \t]*)?|<[ \t]*)?(?<![\w.])(?P<name>"
        + tool
        + r")(?!\w)(?P<after>[ \t]*(?:=>|->|:|=)?[ \t]*)",
        re.IGNORECASE | re.MULTILINE,
    )
    labelled = re.compile(
        r"^[ \t>*_#]*(?:tool|function|call|command|use)\w*(?:[ \t]+name)?[ \t*]*"
        + COLON
        + r"[ \t*`\"']*("
        + tool
        + r")[ \t*`\"'.]*$",
        re.IGNORECASE | re.MULTILINE,
    )
    word = re.compile(r"(?<![\w.])" + tool + r"(?!\w)", re.IGNORECASE)
    return spelled, labelled, word


def _declared_call(text: str, names: tuple[str, ...]) -> str | None:
    """A declared tool written as a call, however it is spelled (the module's last list)."""
    spelled, labelled, word = _declared_patterns(names)
    for m in islice(spelled.finditer(text), MAX_LOOKS):
        name, after, end = m.group("name"), m.group("after"), m.end()
        opener, lead = text[end : end + 1], m.group("lead")
        sign = after.strip()  # "", or the ":", "=", "=>" or "->" between name and arguments
        if opener == "{" and _closes(text, end):  # get_charge{...}, get_charge: {...}
            return name
        if opener == "[" and not sign and _closes(text, end):  # get_charge [ch_1]
            return name
        if opener == "(" and sign and _closes(text, end):  # get_charge => (...)
            return name
        if opener == "(" and not after and _code_arguments(text, end):  # get_charge("ch_1")
            return name
        if lead is not None and lead.startswith("<"):  # <get_charge charge_id="ch_1"/>
            return name
        if lead is not None and not sign and _command(text, end, bool(m.group("cmd"))):
            return name  # /get_charge ch_1, get_charge ch_1 alone on its line
    label = labelled.search(text)
    if label is not None:
        return label.group(1)
    for block in islice(_fenced_blocks(text), MAX_LOOKS):  # a code block that names a tool
        found = word.search(text, *block)
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


def _closes(text: str, opener: int, ends_line: bool = False) -> bool:
    """True if the bracket at ``opener`` is closed (and, if ``ends_line``, ends its line)."""
    pair = {"[": "[]", "(": "()", "{": "{}"}.get(text[opener : opener + 1])
    if pair is None:
        return False
    close = find_brackets(text, opener, limit=1, pair=pair, quotes=pair != "[]")[0][1]
    if close is None:
        return False
    line_end = text.find("\n", close)
    tail = text[close : len(text) if line_end < 0 else line_end]
    return not ends_line or not tail.strip(" \t`*\"'.;")


def _code_arguments(text: str, opener: int) -> bool:
    """True if the parenthesis at ``opener`` closes and holds code: a quoted string,
    ``key=value`` or an object (``get_charge("ch_1")``, not ``calc(129 * 2)``)."""
    close = find_brackets(text, opener, limit=1, pair="()")[0][1]
    if close is None:
        return False
    return re.search(r"[\"'{]|\w[ \t]*=(?!=)", text[opener:close]) is not None


def _command(text: str, end: int, marked: bool) -> bool:
    """True if a tool name at a line start is a command: ``/get_charge ch_1``, ``$ get_charge``,
    or the tool and one argument that is not a plain word alone on the line (``get_charge
    ch_1``)."""
    if marked:
        return True
    line_end = text.find("\n", end)
    rest = text[end : len(text) if line_end < 0 else line_end].strip(" \t`*")
    return _ARGUMENT.fullmatch(rest) is not None
