"""Where an answer's values came from: this run's observations, the question, or only the exemplar.

A small model copies the worked example it is shown. Asked for a sum, it writes the
exemplar's "58.00 dollars"; asked about a 3-day rule, the exemplar's "30 days". Those
answers look like facts, so the guard that catches them (``LadderGuards.exemplar_values``,
:mod:`react_lab.lab.experiments.configs`) asks where each value of the answer came from:

* :func:`values_in` reads the values a text states -- ISO dates, ids (case and separator
  normalised: ``inv-2041`` is ``INV-2041``) and amounts (numbers with a decimal part or
  of two digits or more, so a count such as "3" is not one: a count is worked out, not
  read off an observation);
* :func:`copied_values` returns the answer's values that the exemplar text shows and
  no source of this run does (the question, the observations), in the answer's order.
  An amount read in another unit is the same amount: 12900 (cents) states 129.00 (dollars).

The best-effort rule (``LadderGuards.unsure_best_effort``) reads the same values: a yes or no
asked for after a limit ended the run, citing no value a tool returned, is a guess
(:func:`is_guess`), and the run says :data:`UNSURE` instead.
"""

from __future__ import annotations

import re
from typing import Iterable

from ..protocol import EXEMPLARS
from ..tools import ID_RE

#: What a run that found nothing to settle a yes/no question answers
#: (``LadderGuards.unsure_best_effort``).
UNSURE = "I don't know: no tool result in this run settles it."

_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})")
_TIME = re.compile(r"T?\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?")
_AMOUNT = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")


def _id(text: str) -> str:
    """One spelling per id: letter prefixes as the tools write them.

    ``INV-``, ``KB-``, ``cus_``.
    """
    head, sep, tail = re.match(r"([A-Za-z]+)([_-])(.*)", text).groups()
    return (head.upper() if sep == "-" else head.lower()) + sep + tail


def values_in(text: str) -> list[str]:
    """Return the values ``text`` states, in order.

    Such as ``"date:2026-07-14"``, ``"id:INV-2041"``, ``"amount:129.00"``. Dates and ids are
    taken out before amounts, so their digits are not read as numbers; so are times of day.
    Amounts are numbers with a decimal part or at least two digits.
    """
    found: list[tuple[int, str]] = []
    for m in _DATE.finditer(text):
        found.append((m.start(), f"date:{m.group()}"))

    def blank(m: re.Match) -> str:  # same length, so positions keep the text's order
        return " " * len(m.group())

    rest = _DATE.sub(blank, text)
    for m in ID_RE.finditer(rest):
        found.append((m.start(), f"id:{_id(m.group())}"))
    rest = _TIME.sub(blank, ID_RE.sub(blank, rest))
    for m in _AMOUNT.finditer(rest):
        number = m.group().replace(",", "")
        if "." in number or len(number) >= 2:
            found.append((m.start(), f"amount:{float(number):.2f}"))
    return [value for _, value in sorted(found)]


def _amounts(values: set[str]) -> set[str]:
    """Each amount also in cents and in dollars (a charge's 12900 cents is 129.00 dollars)."""
    more = set(values)
    for v in values:
        if v.startswith("amount:"):
            x = float(v[7:])
            more |= {f"amount:{x * 100:.2f}", f"amount:{x / 100:.2f}"}
    return more


def copied_values(answer: str, exemplar: str, sources: Iterable[str]) -> list[str]:
    """The values of ``answer`` that ``exemplar`` shows and none of ``sources`` does.

    In answer order. ``sources`` are the run's own texts (the question and every
    observation). A value comes out as written for a reader: ``"58.00"``, ``"2026-07-14"``,
    ``"INV-2088"``.
    """
    shown = set(values_in(exemplar))
    own = _amounts({v for text in sources for v in values_in(text)})
    copied = [v for v in values_in(answer) if v in shown and v not in own]
    return [v.split(":", 1)[1] for v in dict.fromkeys(copied)]


def copied_reason(answer: str, exemplar: str, sources: Iterable[str]) -> str | None:
    """The one-line reason to refuse ``answer`` for a value copied from ``exemplar``.

    None when none was copied.
    """
    copied = copied_values(answer, exemplar, sources)
    if not copied:
        return None
    return (
        f"{copied[0]} is from the example above, and no observation of this run shows it. "
        "Answer from this run's observations."
    )


def yes_or_no(answer: str) -> str | None:
    """``"yes"`` or ``"no"`` for an answer that starts with one (any case), else None."""
    word = re.match(r"\W*(yes|no)\b", answer, re.I)
    return word[1].lower() if word else None


def is_guess(answer: str, observations: Iterable[str]) -> bool:
    """True for a yes or no that cites no value of ``observations`` (an id, a date, an amount)."""
    if yes_or_no(answer) is None:
        return False
    fetched = {v for text in observations for v in values_in(text)}
    return not fetched & set(values_in(answer))


def exemplar_text(exemplars) -> str:
    """The rendered exemplars a prompt shows.

    ``None``: the prompt's default, the first of EXEMPLARS.
    """
    return "\n".join(e.render() for e in (EXEMPLARS[:1] if exemplars is None else exemplars))
