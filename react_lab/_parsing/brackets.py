"""The one bracket reader: where a ``{``, ``(`` or ``[`` that a model opened is closed.

Every reader of the parsing code that needs a closing bracket asks :func:`find_brackets`:
a JSON object (``{...}``, strings respected), the arguments of call syntax
(``search("a)")``), and the paper's call ``tool[input]`` (:func:`bracket_call`, where a
quote is an ordinary character: ``search[it's]``). It is a single left-to-right pass with a
stack, so every reader stays linear in the length of the text, whatever the text; trying
each opening bracket on its own, reading on to its end, would be quadratic on
``"{" * 100_000``.
"""

from __future__ import annotations

import re

#: What ends or escapes a string, by its opening quote: the same quote, a backslash, a line end.
_QUOTES = {'"': re.compile(r'[\\"\n]'), "'": re.compile(r"[\\'\n]")}
_SPACES_THEN_BRACE = re.compile(r"[ \t]*\{")
_PATTERNS: dict[tuple[str, bool], tuple[re.Pattern, re.Pattern]] = {}


def _patterns(pair: str, quotes: bool) -> tuple[re.Pattern, re.Pattern]:
    """What matters outside any bracket (its opening), and inside one (both, and quotes)."""
    if (pair, quotes) not in _PATTERNS:
        opening, closing = (re.escape(c) for c in pair)
        inside = "[" + opening + closing + (r"\"'\\" if quotes else "") + "]"
        _PATTERNS[pair, quotes] = (re.compile(opening), re.compile(inside))
    return _PATTERNS[pair, quotes]


def find_brackets(
    text: str,
    start: int,
    limit: int = 16,
    *,
    end: int | None = None,
    pair: str = "{}",
    quotes: bool = True,
) -> list[tuple[int, int | None]]:
    """The first ``limit`` bracketed spans at or after ``start``, as ``(open, end)``.

    In order of opening.

    ``pair`` is the opening and the closing bracket (``"{}"``, ``"()"``, ``"[]"``); the
    reading stops at ``end`` (default: the end of the text). ``end`` of a span is just past
    its matching closing bracket, or None if it is never closed. Nested spans count
    (``{"a": {...}}`` gives two). With ``quotes``, brackets inside strings do not: a string
    opens with ``"`` or ``'`` inside a span and ends at the same quote (a backslash escapes
    the next character) or at the end of its line -- JSON and Python strings never hold a
    raw line break, prose quotes often run wild -- and an apostrophe inside a word
    (``don't``) opens nothing.
    """
    outside, inside = _patterns(pair, quotes)
    opening = pair[0]
    stop = len(text) if end is None else end
    spans: list[list] = []  # [open, end] per span found
    stack: list[int | None] = []  # the open spans: an index into spans, None past the limit
    unclosed = 0  # spans in spans still waiting for their closing bracket
    quote = None  # the quote of the string being read
    pos = start
    while True:
        if quote:
            pattern = _QUOTES[quote]
        else:
            pattern = inside if stack else outside
        m = pattern.search(text, pos, stop)
        if m is None:
            break
        i, ch = m.start(), m.group()
        pos = i + 1
        if quote:
            if ch == "\\":
                pos += 1  # the escaped character is skipped
            else:
                quote = None  # the closing quote, or the end of the line
        elif ch == opening:
            if len(spans) < limit:
                stack.append(len(spans))
                spans.append([i, None])
                unclosed += 1
            else:
                stack.append(None)
        elif ch == pair[1]:
            k = stack.pop()
            if k is not None:
                spans[k][1] = i + 1
                unclosed -= 1
                if unclosed == 0 and len(spans) == limit:
                    break
        elif ch == '"' or (ch == "'" and not text[i - 1].isalnum()):
            quote = ch
    return [(j, close) for j, close in spans]


def object_at(text: str, pos: int) -> tuple[int, int | None] | None:
    """The ``{...}`` that opens at ``pos`` after spaces or tabs, as ``(open, end)``.

    ``end`` is just past the matching ``}`` (strings respected), or None if it is never
    closed. None if no ``{`` is there.
    """
    brace = _SPACES_THEN_BRACE.match(text, pos)
    if brace is None:
        return None
    return find_brackets(text, brace.end() - 1, limit=1)[0]


def bracket_call(text: str, start: int, line_end: int) -> tuple[str, str, int] | None:
    """The paper's call ``name[args]`` in ``text[start:line_end]``: ``(name, args, end)``, or None.

    ``name`` is everything before the first ``[``; it must not be blank or hold ``]``, ``{``
    or ``}``. ``args`` runs to the matching ``]``; a call never closed on its line (the
    model was cut off mid-call) takes the rest of the line. A quote is an ordinary character
    (``search[it's]``), except in arguments that open with a quote or a bracket, which are
    read as a string or JSON would be when they close on the line: ``search["a]b"]`` is
    ``"a]b"``, not ``"a``.
    """
    open_at = text.find("[", start, line_end)
    if open_at < 0:
        return None
    name = text[start:open_at]
    if not name.strip() or any(ch in name for ch in "]{}"):
        return None
    name = name.strip(" \t").strip("`*\"' ")
    quoted = text[open_at + 1 : line_end].lstrip(" \t")[:1] in ('"', "'", "{", "[")
    close = None
    if quoted:
        close = find_brackets(text, open_at, limit=1, end=line_end, pair="[]", quotes=True)[0][1]
    if close is None:
        close = find_brackets(text, open_at, limit=1, end=line_end, pair="[]", quotes=False)[0][1]
    if close is None:
        return name, text[open_at + 1 : line_end], line_end
    return name, text[open_at + 1 : close - 1], close
