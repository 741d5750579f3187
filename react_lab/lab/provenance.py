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
from ..provenance import sourced, values_in

__all__ = ["values_in", "copied_values", "copied_reason", "yes_or_no", "is_guess", "UNSURE"]

#: What a run that found nothing to settle a yes/no question answers
#: (``LadderGuards.unsure_best_effort``).
UNSURE = "I don't know: no tool result in this run settles it."


def copied_values(answer: str, exemplar: str, sources: Iterable[str]) -> list[str]:
    """The values of ``answer`` that ``exemplar`` shows and none of ``sources`` does.

    In answer order. ``sources`` are the run's own texts (the question and every
    observation). A value comes out as written for a reader: ``"58.00"``, ``"2026-07-14"``,
    ``"INV-2088"``.
    """
    sources = list(sources)
    shown = set(values_in(exemplar))
    own = sourced(sources[0] if sources else "", sources[1:])  # the provenance rule's sources
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
