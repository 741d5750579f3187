"""Every rule a core checker names is numbered and named in its notebook's text.

A failure says "breaks rule 3 (an int): ..."; the learner looks for rule 3 in the notebook
and finds "3. *an int*" (or "3. **An int**"): the checker's words are the notebook's.
"""

import re
from pathlib import Path

import nbformat
import pytest

from react_lab.workshop.core_exercises import CORE

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"


def _stated(exercise, number: int) -> int:
    """The notebook that states rule ``number`` of ``exercise``: an edit's kept rules are its
    earlier notebook's (notebook 03: "Rules 1 to 5 are notebook 02's")."""
    earlier = CORE.get(exercise.edits)
    if earlier and earlier.rules.get(number) == exercise.rules[number]:
        return _stated(earlier, number)
    return exercise.notebook


@pytest.mark.parametrize("name", list(CORE))
def test_every_rule_a_checker_names_is_numbered_and_named_in_its_notebook(name):
    """A failure says "breaks rule 3 (an int)": the learner finds "3. *an int*" in the notebook."""
    exercise = CORE[name]
    for number, rule in exercise.rules.items():
        path = next(NOTEBOOKS.glob(f"0{_stated(exercise, number)}_*.ipynb"))
        markdown = " ".join(
            " ".join(cell.source.split())
            for cell in nbformat.read(path, as_version=4).cells
            if cell.cell_type == "markdown"
        )
        stated = rf"(^|\s){number}\. [*_]+{re.escape(rule)}[*_]*"
        assert re.search(stated, markdown, re.IGNORECASE), (path.name, number, rule)
