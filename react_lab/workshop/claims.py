"""Figures this lab quotes from the ReAct paper and from the seed articles.

And a table to check them. Wherever a notebook states a figure from elsewhere it prints a
:class:`ClaimTable`: the claim, what this run measured, and why the two differ. The quoted
figures live here, once, with where they come from; the "measured here" column is always
computed in the notebook's own run. "The seed" is the set of articles this lab was built
from.
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass
from datetime import date

#: The paper that named the protocol (arXiv v1 submitted 6 October 2022; published at ICLR 2023).
PAPER = {
    "title": "ReAct: Synergizing Reasoning and Acting in Language Models",
    "authors": (
        "Shunyu Yao",
        "Jeffrey Zhao",
        "Dian Yu",
        "Nan Du",
        "Izhak Shafran",
        "Karthik Narasimhan",
        "Yuan Cao",
    ),
    "year": 2022,
    "arxiv": "2210.03629",
    "venue": "ICLR 2023",
    "url": "https://arxiv.org/abs/2210.03629",
    # The paper's prompting experiments ran on PaLM-540B (parameters).
    "model": "PaLM-540B",
    "model_parameters": 540e9,
}

#: The paper's headline results on the two interactive tasks: absolute points of success
#: rate over the best imitation- and reinforcement-learning baselines, from only one or
#: two in-context exemplars.
PAPER_GAINS = {"ALFWorld": 34, "WebShop": 10}

#: The two dates that bracket the text protocol's reason to exist.
TEXT_PROTOCOL = ("ReAct on arXiv", date(2022, 10, 6))
FUNCTION_CALLING = ("OpenAI function calling (the 0613 models)", date(2023, 6, 13))
#: What the seed says of that window, in its own units.
SEED_WINDOW = {"months": 8, "from": "October 2022", "to": "June 2023"}

#: Token figures the seed articles state (tokens of a GPT-class tokenizer).
SEED_TOKENS = {
    "system_prompt": 340,  # one exemplar, three tools ("around 340")
    "production_prompt": 1400,  # three exemplars, eight tools
    "production_exemplars": 3,
    "production_tools": 8,
    "conversation_steps": 8,  # 1,400 paid eight times ...
    "format_tokens": 11200,  # ... = 11,200 per conversation
    "exemplar": "low hundreds",  # per exemplar, from the gap between the two prompts
}

#: The seed's worked cost example: P, O, A and N, and what it says they give.
SEED_RUN = {
    "P": 1000,
    "O": 600,
    "A": 100,
    "N": 10,
    "step_1": 1000,
    "step_10": 7300,
    "total": 41500,
    "naive": 10000,
}


def months_between(start: date, end: date) -> int:
    """Whole calendar months from ``start`` to ``end`` (a month counts once its day is reached)."""
    return (end.year - start.year) * 12 + end.month - start.month - (end.day < start.day)


def citation() -> str:
    """The paper as a one-line reference: authors, year, title, venue, arXiv id."""
    authors = ", ".join(PAPER["authors"][:-1]) + " and " + PAPER["authors"][-1]
    return (
        f"{authors} ({PAPER['year']}). {PAPER['title']}. {PAPER['venue']}. "
        f"arXiv:{PAPER['arxiv']} ({PAPER['url']})"
    )


@dataclass(frozen=True)
class Claim:
    """One row: what a source claims, what this run measured, why the two differ."""

    claim: str
    measured: str
    why: str


class ClaimTable:
    """Rows of "claim / measured here / why they differ", shown as HTML in a notebook.

    ``repr`` is the same table as plain text (what nbval compares, and what a terminal
    shows), each row as three wrapped lines.
    """

    COLUMNS = ("claim", "measured here", "why they differ")

    def __init__(self, rows=()):
        self.rows: list[Claim] = list(rows)

    def add(self, claim: str, measured: str, why: str) -> "ClaimTable":
        """Append a row; returns the table, so calls chain."""
        self.rows.append(Claim(claim, measured, why))
        return self

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        blocks = []
        for row in self.rows:
            lines = []
            for label, text in zip(self.COLUMNS, (row.claim, row.measured, row.why)):
                lines += textwrap.wrap(
                    text, 96, initial_indent=f"{label + ':':<17}", subsequent_indent=" " * 17
                ) or [f"{label}:"]
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)

    def _repr_html_(self) -> str:
        head = "".join(f"<th style='text-align:left'>{c}</th>" for c in self.COLUMNS)
        body = "".join(
            "<tr>"
            + "".join(
                f"<td style='text-align:left;vertical-align:top'>{html.escape(t)}</td>"
                for t in (r.claim, r.measured, r.why)
            )
            + "</tr>"
            for r in self.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def holds(statement: str, true: bool) -> None:
    """Print ``statement``, marked by whether this run bears it out.

    The text beside it relies on ``statement``.

    ``✓ statement`` when ``true``; otherwise ``✗ not in this run: statement`` (another model,
    another version of llama.cpp), so a learner sees the text and the output part ways. In
    solutions mode (CI, ``REACT_LAB_SOLUTIONS=1``) a false statement raises
    ``AssertionError``: the notebook's text cannot drift from its output unnoticed.
    """
    from .exercises import solutions_mode

    true = bool(true)
    if not true and solutions_mode():
        raise AssertionError(
            f"the notebook's text says: {statement}; this run does not bear it out"
        )
    print(f"✓ {statement}" if true else f"✗ not in this run: {statement}")
