"""The core path fits its room.

Minutes, words, cells, a checked quiz and "what to try next" in each.

The core path is the notebooks directly in notebooks/ (the bench is notebooks/bench/). Each
core notebook states its minutes once, in its metadata, and prints them from its first cell;
the guide's plan (docs/workshop.md) carries the same minutes, plus the minutes planned for the
notebooks not written yet, and the whole plan fits 150 minutes.
"""

import importlib.util
import json
import re
from pathlib import Path

import pytest

from react_lab.workshop.quiz import QUIZZES

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
GUIDE = REPO / "docs" / "workshop.md"
MINUTES, WORDS, CELLS = 150, 7000, 240


def core() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def bench() -> list[Path]:
    return sorted((NOTEBOOKS / "bench").glob("*.ipynb"))


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def plan() -> list[tuple[str, str, int]]:
    """The guide's plan: (number, notebook file or '', minutes) per row, the total row left out."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## The plan", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        match = re.match(r"^\|\s*(\d\d)\s*\|(.*?)\|\s*(\d+)\s*\|", line)
        if match:
            name = re.search(r"`(\d\d_\w+\.ipynb)`", match.group(2))
            rows.append((match.group(1), name.group(1) if name else "", int(match.group(3))))
    return rows


def test_the_core_path_is_there():
    names = [p.name for p in core()]
    assert names[:6] == [
        "01_text_protocol.ipynb",
        "02_the_loop.ipynb",
        "03_forged_observations.ipynb",
        "04_parser_vs_schema.ipynb",
        "05_cost.ipynb",
        "06_guards.ipynb",
    ], names
    assert names[-1] == "08_measuring.ipynb" and set(names[6:-1]) <= {"07_native.ipynb"}, names


def test_the_old_long_notebooks_live_in_the_bench():
    assert (
        not (NOTEBOOKS / "08_evaluation.ipynb").exists()
        and not (NOTEBOOKS / "09_working_agent.ipynb").exists()
    )
    for name in ("08_evaluation.ipynb", "09_working_agent.ipynb"):
        assert (
            read(NOTEBOOKS / "bench" / name)["metadata"]["react_lab"]["deepens"]
            == "08_measuring.ipynb"
        )


@pytest.mark.parametrize("path", core(), ids=lambda p: p.name)
def test_each_core_notebook_states_its_minutes_once_and_prints_them_first(path):
    nb = read(path)
    minutes = nb["metadata"].get("react_lab", {}).get("minutes")
    assert isinstance(minutes, int) and 5 <= minutes <= 40, minutes
    first_code = next(source(c) for c in nb["cells"] if c["cell_type"] == "code")
    assert f'show_minutes("{path.name}")' in first_code
    markdown = " ".join(source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert not re.search(r"\b\d+\s*(to\s*\d+\s*)?minutes\b", markdown), (
        "minutes stated in the text too"
    )


@pytest.mark.parametrize("path", core(), ids=lambda p: p.name)
def test_each_core_notebook_ends_with_a_checked_quiz_and_what_to_try_next(path):
    cells = read(path)["cells"]
    number = path.name[:2]
    calls = [
        source(c) for c in cells if c["cell_type"] == "code" and f'quiz("{number}")' in source(c)
    ]
    assert len(calls) == 1, f"{path.name} calls quiz({number!r}) {len(calls)} times"
    assert len(QUIZZES[number]) in (2, 3)
    quiz_cell = next(
        c for c in cells if c["cell_type"] == "code" and f'quiz("{number}")' in source(c)
    )
    stated = quiz_cell["metadata"].get("react_lab", {}).get("quiz")
    assert stated in (None, len(QUIZZES[number])), f"the quiz cell says {stated} questions"
    assert all(0 <= q.right < len(q.choices) for q in QUIZZES[number])
    if cells[-1]["cell_type"] == "code":  # the learner's agent to download, after what to try next
        assert source(cells[-1]).strip() == "download_link()"
        cells = cells[:-1]
    last = source(cells[-1])
    assert cells[-1]["cell_type"] == "markdown" and last.startswith("## What to try next")


#: The room-minutes tool (read and written, counted), beside the clone in CI and in a workshop
#: maintainer's checkout; a clone on its own skips the comparison.
ROOM_MINUTES = REPO.parent / "shared" / "tools" / "room_minutes.py"


@pytest.mark.skipif(
    not ROOM_MINUTES.exists(), reason="../shared/tools/room_minutes.py not beside the clone"
)
@pytest.mark.parametrize("path", core(), ids=lambda p: p.name)
def test_each_core_notebook_states_the_minutes_the_room_tool_measures(path):
    spec = importlib.util.spec_from_file_location("room_minutes", ROOM_MINUTES)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    measured = tool.estimate(path)["estimate"]
    stated = read(path)["metadata"]["react_lab"]["minutes"]
    assert abs(stated - measured) <= 0.5, (
        f"{path.name} says {stated} minutes; the tool measures {measured}"
    )


def test_the_core_path_fits_its_budget():
    notebooks = [read(p) for p in core()]
    words = sum(
        len(source(c).split())
        for nb in notebooks
        for c in nb["cells"]
        if c["cell_type"] == "markdown"
    )
    cells = sum(len(nb["cells"]) for nb in notebooks)
    assert words <= WORDS, f"{words} words of markdown in the core (budget {WORDS})"
    assert cells <= CELLS, f"{cells} cells in the core (budget {CELLS})"
    stored = sum(nb["metadata"]["react_lab"]["minutes"] for nb in notebooks)
    assert stored <= MINUTES


def test_no_stored_table_in_the_core_is_over_20_rows():
    for path in core():
        for cell in read(path)["cells"]:
            for out in cell.get("outputs", []):
                html = "".join(out.get("data", {}).get("text/html", ""))
                assert html.count("<tr") <= 21, (
                    f"{path.name}: a stored table of {html.count('<tr') - 1} rows"
                )


def discussion() -> dict[str, int]:
    """The guide's plan: the discussion budgeted per notebook file, by its column."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## The plan", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(
        r"^\|\s*\d\d\s*\|[^|]*`(\d\d_\w+\.ipynb)`[^|]*\|\s*\d+\s*\|\s*(\d+)\s*\|", section, re.M
    )
    return {name: int(talk) for name, talk in rows}


def test_the_guide_states_the_slot_as_work_plus_discussion_and_the_notebooks_say_the_same():
    text = GUIDE.read_text(encoding="utf-8")
    talk = discussion()
    assert set(talk) == {name for _, name, _ in plan() if name}
    work = sum(m for _, _, m in plan())
    stated = re.search(r"\|\s*\|\s*\*\*total\*\*\s*\|\s*\*\*\d+\*\*\s*\|\s*\*\*(\d+)\*\*", text)
    assert stated and int(stated.group(1)) == sum(talk.values())
    slot = re.search(
        r"The slot: (\d+) minutes of work, (\d+) of discussion and a ten-minute break make\s+(\d+)",
        text,
    )
    assert slot and [int(x) for x in slot.groups()] == [
        work,
        sum(talk.values()),
        work + sum(talk.values()) + 10,
    ]
    assert work + sum(talk.values()) + 10 <= 180, "the slot is three hours"
    for path in core():  # the notebook's first cell prints the discussion its metadata holds
        stated = read(path)["metadata"]["react_lab"].get("discussion")
        assert stated in (None, talk[path.name]), (path.name, stated, talk[path.name])


def test_the_guide_plans_150_minutes_from_the_notebooks_own():
    rows = plan()
    assert [n for n, _, _ in rows] == [f"{i:02d}" for i in range(1, len(rows) + 1)]
    total = sum(m for _, _, m in rows)
    assert total <= MINUTES, f"the plan adds to {total} minutes"
    stated = re.search(
        r"\|\s*\|\s*\*\*total\*\*\s*\|\s*\*\*(\d+)\*\*", GUIDE.read_text(encoding="utf-8")
    )
    assert stated and int(stated.group(1)) == total
    by_name = {p.name: read(p)["metadata"]["react_lab"]["minutes"] for p in core()}
    planned = {name: m for _, name, m in rows if name}
    assert set(by_name) <= set(planned), (
        f"core notebooks missing from the plan: {set(by_name) - set(planned)}"
    )
    for name, minutes in by_name.items():
        assert planned[name] == minutes, (
            f"{name}: the guide plans {planned[name]}, the notebook says {minutes}"
        )
    slots = [n for n, name, _ in rows if not name or name not in by_name]
    assert all(int(n) > 6 for n in slots)  # only the last notebooks are still to be written


@pytest.mark.parametrize("path", bench(), ids=lambda p: p.name)
def test_each_bench_notebook_says_which_core_notebook_it_deepens(path):
    nb = read(path)
    deepens = nb["metadata"].get("react_lab", {}).get("deepens")
    assert deepens and (NOTEBOOKS / deepens).is_file(), deepens
    assert f"Deepens core notebook {deepens[:2]}" in source(nb["cells"][0])
