"""What a model-written ``Observation`` line looks like: the rule of the parser's ``find_forged``.

The loop writes every observation; a line the model wrote that opens with an ``Observation``
label is forged, and the parser drops it and everything after it. The rule, line by line
(:func:`is_observation_label`): with short HTML tags (``<b>``) and special tokens
(``<|im_end|>``) left out, the line is characters that are not letters (markdown
``**``/``#``/``>``, list markers ``-``/``1.``, zero-width spaces), ``Observation(s)`` in any
case, then only spaces, digits, ``*``, ``_``, ``#``, ``.``, ``~``, backticks, brackets and
zero-width characters, then ``:``, ``：`` or a dash (``-``, ``–``, ``—``) that does not join a
word (``Observation-based``). A finished line (a line break follows) that is the label alone,
as a heading, counts too -- ``Observation``, ``**Observation 2**``, ``### Observations``,
``<b>Observation</b>``: capitalised, with heading or emphasis marks and a step number at most
(not ``- Observation`` in a list, nor ``observation.`` ending a sentence). So ``- Observation
(1):`` counts; ``Observational data:``, ``Observation shows that x: y`` and ``the observation:
...`` do not. A line opening with an ``<observation>`` tag counts, and so does ``Observation:``
after the call on an ``Action`` line (``Action: search[x] Observation: {...}``,
:func:`inline_observation`). Labels are read with full-width letters folded to ASCII
(``Ｏｂｓｅｒｖａｔｉｏｎ:``) and any line break ``str.splitlines()`` knows ending a line
(:data:`LABEL_VIEW`).
"""

from __future__ import annotations

import re

from ..protocol import OBSERVATION
from .labels import ACTION_LINE, NEWLINES

#: The text as labels are read: every line break a ``"\n"`` and full-width letters folded to
#: ASCII (``"\uff2f\uff42\uff53"`` is ``"Obs"``), one character for one.
LABEL_VIEW = {**NEWLINES, **{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}}
#: A short HTML tag (``<b>``, ``</span>``) or a special token (``<|im_end|>``) on a label's line:
#: left out before the label is read. Its token part is narrower than
#: :data:`react_lab._parsing.tokens.SPECIAL_TOKEN` (40 characters, no bar inside), and stays
#: so: with the wider one, ``<|a|b|>Observation:`` would become a forged line.
HTML_TAG = re.compile(r"</?[A-Za-z][^<>\n]{0,40}>|<[|\uff5c][^<>\n|\uff5c]{0,40}[|\uff5c]>")
#: A line opening with an ``<observation>`` tag.
_OBS_TAG = re.compile(r"[^\w<]*<observations?(?:[ \t][^<>\n]{0,40})?>", re.IGNORECASE)
#: The label after the call on an Action line: capitalised, after a space or a closing mark.
_INLINE_OBS = re.compile(
    r"(?<=[\s\])}>`])[*_]*(?:Observations?|OBSERVATIONS?)[ \t*_]*(?:\d+[ \t*_]*)?:"
)
OBS_WORD = re.compile(r"observation", re.IGNORECASE)
_OBS_HEAD = (
    r"[\W\d_]*"  # markdown, list markers, numbers, zero-width characters
    r"observations?"  # the label, singular or plural
    r"[\s\d*_#.()\[\]`~\u200b-\u200d\u2060\ufeff]*"  # step number, emphasis, spaces: no letters
)
#: The label's colon (``:`` or ``：``), or a dash not joined to a word.
OBS_LABEL = re.compile(_OBS_HEAD + r"(?:[:\uff1a]|[-\u2013\u2014](?![^\W\d_]))", re.IGNORECASE)
#: The whole line a heading-style label: capitalised, with markdown heading or emphasis marks
#: and a step number at most (prose and plans write "observation.", "- Observation").
_OBS_BARE = re.compile(r"[ \t>#*_]*(?:Observations?|OBSERVATIONS?)[ \t*_]*(?:\d+[ \t*_]*)?")
#: What may come before the letters of a line: a letter is a word character not a digit or _.
_NOT_LETTERS = re.compile(r"[\W\d_]*")
_OPENING, _CLOSING = "[({", "])}"


def is_observation_label(line: str, finished: bool = False) -> bool:
    """True if ``line`` opens with an ``Observation`` label.

    ``line`` is one line of :data:`LABEL_VIEW`, without its line break.

    ``finished``: a line break follows ``line``, so a line that is the label alone counts.
    """
    if "<" in line:
        if _OBS_TAG.match(line):
            return True
        line = HTML_TAG.sub("", line)
    if OBS_LABEL.match(line) is not None:
        return True
    return finished and _OBS_BARE.fullmatch(line) is not None


def inline_observation(line: str) -> int | None:
    """Where an ``Observation:`` label starts after the call on an ``Action`` line, or None.

    ``Action: search[x] Observation: {...}``: the label follows a call whose brackets are
    all closed (so ``search["Observation: x"]`` is an argument) with a space or a closing
    mark before it; capitalised, as a label is. The brackets are a tally over the three
    kinds, not a reading of pairs: a label counts once no more brackets were opened than
    closed before it. One pass over the line.
    """
    action = ACTION_LINE.match(line)
    if action is None:
        return None
    depth, pos = 0, action.end()
    for m in _INLINE_OBS.finditer(line, action.end()):
        for ch in line[pos : m.start()]:
            depth += 1 if ch in _OPENING else -1 if ch in _CLOSING else 0
        pos = m.start()
        if depth <= 0 and line[action.end() : m.start()].strip():
            return m.start()
    return None


def settled(text: str, at: int | None) -> int | None:
    """``at``, the first forged line of ``text``, once no later text can change it; else None.

    A line is settled when it is finished, or when its label is complete (``:``/``：``, or a
    dash already followed by a character) with no ``<`` a later ``>`` could make a tag.
    """
    if at is None:
        return None
    lines = text.translate(LABEL_VIEW)
    if lines.find("\n", at) >= 0:
        return at  # the forgery finder reads whole lines: a finished line is final
    line = lines[at:]
    label = OBS_LABEL.match(line)
    if "<" in line or label is None:
        return None  # a later ">" could make a tag that hides or moves the label
    if line[label.end() - 1] in "-\u2013\u2014" and label.end() == len(line):
        return None  # "Observation -" may yet become "Observation -based"
    return at


def trim_partial_stop(text: str, word: str = OBSERVATION) -> str:
    """Drop a last line that is a cut-off start of ``word`` (``"\\nObserv"``), as servers leave it.

    The last line is compared without HTML tags, leading non-letters (``**``, ``- ``,
    ``1. ``) and trailing spaces, ``*`` and ``_``, as the forgery finder reads labels.
    Returns ``text`` unchanged otherwise.
    """
    view = text.translate(LABEL_VIEW)
    cut = view.rfind("\n")
    if cut < 0:
        return text
    last = HTML_TAG.sub("", view[cut + 1 :])
    frag = last[_NOT_LETTERS.match(last).end() :].rstrip(" \t*_")
    if frag and word.lower().startswith(frag.lower()):
        return text[:cut]
    return text
