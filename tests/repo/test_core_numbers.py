"""A number a core notebook's prose states is one its cells show.

Every number in a core notebook's markdown (outside code spans) must appear in a stored output
or the code of that notebook (a results file's figures are shown by the cell that loads it): a
figure the prose quotes and no
cell prints is a claim the learner cannot check, and one that a re-run can contradict
silently. Names that hold digits are not figures: a seed's number ("seed 004"), a notebook's
("06's loop"), a year.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"(?<![\w.$/-])\d[\d,]*(?:\.\d+)?(?![\w/-]|\.\d)")
#: Digits that name something: a heading's section or a list's item, a seed ("seed 004", "000 to
#: 004"), a notebook ("06's", "07 and 08"), a year, a checker's rule ("rules 5, 6 and 7").
NAMES = re.compile(
    r"^#+ .*$|^\s*\d+\. "  # a heading's or a numbered list's number
    r"|\b0\d\d?\b|\b(?:19|20)\d\d\b"
    r"|\brules? \d+(?:(?:,|,? and|,? or| to) \d+)*",
    re.I | re.M,
)


def figures(markdown: str) -> list[str]:
    """The numbers a markdown text states, without code spans and names."""
    prose = NAMES.sub(" ", re.sub(r"`[^`]*`", " ", markdown))
    return [n.rstrip(",") for n in NUMBER.findall(prose)]


def shown(cells: list[dict]) -> str:
    """What a notebook's cells show: their code and stored outputs, as text."""
    parts = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        parts.append("".join(cell["source"]))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", [])))
            for kind, value in (out.get("data") or {}).items():
                if kind.startswith("text/"):
                    parts.append("".join(value))
    return "\n".join(parts)


def test_figures_reads_prose_not_names():
    text = "## 4. A\n2. Seed 004 says 61 in 100; `max_tokens=80` is code; 06's rules 5 and 6, 2022."
    assert figures(text) == ["61", "100"]


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("0*.ipynb")), ids=str)
def test_every_figure_in_a_core_notebooks_prose_is_shown(notebook):
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    seen = shown(cells)
    unshown = [
        (i, n)
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "markdown"
        for n in figures("".join(cell["source"]))
        if not re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", seen)
    ]
    assert not unshown, f"{notebook.name}: figures no cell shows (cell, figure): {unshown}"
