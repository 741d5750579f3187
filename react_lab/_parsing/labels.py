"""The ReAct labels as real completions write them, one regex per label, and the parts they share.

:func:`react_lab.lab.agent.parser.parse` finds ``Thought:``, ``Action:`` and ``Answer:`` with the
regexes here. Each is anchored to a line start (``re.MULTILINE``) and written so that no two
neighbouring parts can match the same character (a run of spaces goes to exactly one
``[ \\t]*``): the regex engine then never backtracks more than one line, and reading labels
stays linear however long or strange the text is.

A label may be numbered (``Action 2:``), in any case, in markdown (``**Action:**``), after
quote and list marks, after the invisible characters some tokenizers emit, and end in ``:``
or a full-width ``：`` / small ``﹕`` colon (CJK text writes those). Before any label is read
the parser writes every line break as ``"\\n"`` (:func:`one_newline`), so the regexes and
everything after them know one line break only.
"""

from __future__ import annotations

import re

from ..protocol import LINE_BREAKS  # every character str.splitlines() ends a line at

# --------------------------------------------------------------------------- the parts

#: A translation table writing each of them as ``"\n"``.
NEWLINES = str.maketrans(dict.fromkeys(LINE_BREAKS, "\n"))

#: What may stand before a label on its line: spaces, quote and markdown marks, and the
#: invisible format characters tokenizers and right-to-left text emit: a byte-order mark, a
#: soft hyphen, zero-width spaces and joiners, bidi marks, embeddings and isolates, invisible
#: operators, tag characters.
LEAD = (
    r"[ \t>*_#\ufeff\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    r"\u2066-\u2069\U000e0000-\U000e007f]*"
)
#: What ends a label: a colon, full-width or small.
COLON = r"[:\uff1a\ufe55]"
#: A name as models write one: a letter first, then word characters, dots and dashes.
NAME = r"[^\W\d][\w.-]*"
#: Full-width brackets and colons, written as their ASCII forms (one character for one).
FULL_WIDTH = str.maketrans("\uff3b\uff3d\uff08\uff09\uff5b\uff5d\uff1a\ufe55", "[](){}::")
#: A call whose brackets are full-width, as CJK text writes them: ``search［x］``.
FULL_WIDTH_CALL = re.compile(r"[ \t*`\"']*" + NAME + r"[ \t]*[\uff3b\uff08\uff5b]")
#: A markdown fence that opens a block: three backticks and a language (```` ```json ````).
FENCE = r"```[\w-]*[ \t]*"
#: The label words a model writes at a line start, other than the answer's.
LABEL_WORDS = ("Thought", "Action", "Observation", "Question")

_FLAGS = re.MULTILINE | re.IGNORECASE


def _label(name: str) -> re.Pattern:
    """The regex of the label ``name``: a step number, emphasis and spaces allowed around it."""
    return re.compile(
        "^" + LEAD + name + r"[ \t]*(?:(\d+)[ \t]*)?(?:\*+[ \t]*)?" + COLON + r"[ \t*]*", _FLAGS
    )


def text_start(label: re.Match) -> int:
    """Where the text after a label begins: past the label's own emphasis (``**Answer:** 42``)
    but not the text's (``Answer: **42**`` keeps its ``**``)."""
    written = label.group()
    colon = max(written.rfind(c) for c in ":\uff1a\ufe55")
    after = written[colon + 1 :]
    if "*" not in after or "*" in written[:colon] or after != after.rstrip(" \t"):
        return label.end()  # the label's emphasis, or stars set apart from the text
    return label.start() + colon + 1 + len(after) - len(after.lstrip(" \t"))


# --------------------------------------------------------------------------- the labels

ACTION_LINE = _label("Action")
#: ``Action Input:`` (LangChain's ReAct): the input of the tool named on the Action line.
INPUT_LINE = re.compile(
    "^" + LEAD + r"Action[ \t]*(?:(\d+)[ \t]*)?Input[ \t]*(?:\*+[ \t]*)?" + COLON + r"[ \t*]*",
    _FLAGS,
)
ANSWER_LINE = _label(r"(?:Final[ \t]+)?Answer")
THOUGHT_LINE = _label("Thought")
#: Any label at a line start, the colon included: where an answer's text ends.
ANY_LABEL = re.compile(
    "^"
    + LEAD
    + r"(?:"
    + "|".join(LABEL_WORDS)
    + r"|(?:Final[ \t]+)?Answer)\b"
    + r"[ \t]*(?:\d+[ \t]*)?(?:Input[ \t]*)?(?:\*+[ \t]*)?"
    + COLON,
    _FLAGS,
)
#: A ``Question:`` line, which a completion sometimes repeats: never part of the thought.
QUESTION_LINE = re.compile(r"^Question:.*$", re.MULTILINE)
#: A fence alone on its line.
FENCE_LINE = re.compile("^[ \t]*" + FENCE + "$", re.MULTILINE)
#: ``Observation`` as a word in a tool name (``Action: Observation: ...``).
OBSERVATION_WORD = re.compile(r"(?<!\w)observations?\b", re.IGNORECASE)

_LABEL_WORD = re.compile("(?i)(" + "|".join(w.lower() for w in LABEL_WORDS) + r")\b")


def one_newline(text: str) -> str:
    """``text`` with every line break written as ``"\\n"``.

    One character for one, so indices into the result are indices into ``text``.
    """
    return text.translate(NEWLINES)


def end_of_line(text: str, pos: int) -> int:
    """The index of the first ``"\\n"`` at or after ``pos``, or ``len(text)`` if there is none."""
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def strip_answer_label(line: str) -> str:
    """``line`` without a leading answer label (:data:`ANSWER_LINE`, markdown around it too)."""
    label = ANSWER_LINE.match(line)
    return line[label.end() :] if label else line


def starts_with_label(line: str) -> bool:
    """True if ``line`` begins with ``Thought``, ``Action``, ``Observation`` or ``Question``."""
    return _LABEL_WORD.match(line) is not None
