"""The stored notebooks are the learner's view, and scripts/store-notebooks.py keeps them so."""

import importlib.util
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "store_notebooks", REPO / "scripts" / "store-notebooks.py"
)
store = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(store)

# Notebooks stored before scripts/store-notebooks.py existed. Re-store each with the script
# and delete it here: the strict xfail turns into a failure the moment one passes.
NOT_YET_STORED: set[str] = set()


@pytest.mark.parametrize(
    "path",
    sorted(
        [*(REPO / "notebooks").glob("*.ipynb"), *(REPO / "notebooks" / "bench").glob("*.ipynb")]
    ),
    ids=lambda p: str(p.relative_to(REPO / "notebooks")),
)
def test_each_stored_notebook_is_the_learners_view(path, request):
    if path.name in NOT_YET_STORED:
        request.applymarker(
            pytest.mark.xfail(
                strict=True, reason="not re-stored with scripts/store-notebooks.py yet"
            )
        )
    assert store.problems(nbformat.read(path, as_version=4)) == []


def stored(cells, **metadata):
    """A notebook as the script leaves it: counts 1..N, the installed kernelspec."""
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = store.kernelspec("python3")
    nb.metadata.update(metadata)
    n = 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            n += 1
            cell.execution_count = n
    return nb


def stream(text):
    return new_output("stream", name="stdout", text=text)


def test_a_good_stored_notebook_has_no_problems():
    nb = stored(
        [
            new_markdown_cell("# t"),
            new_code_cell("x = 1"),
            new_code_cell(
                'check("dispatch", dispatch)',
                outputs=[stream("✎ dispatch: not written yet — write ...\n")],
            ),
        ]
    )
    assert store.problems(nb) == []


def test_problems_names_what_a_learner_would_trip_over():
    nb = stored(
        [
            new_code_cell("plt.show()"),
            new_code_cell(
                '# NBVAL_CHECK_OUTPUT\ncheck("dispatch", dispatch)',
                outputs=[stream("✓ dispatch: 3/3 cases pass (reference solution)\n")],
            ),
            new_code_cell(
                "w",
                outputs=[
                    new_output(
                        "execute_result",
                        execution_count=3,
                        data={
                            store.WIDGET_VIEW: {
                                "model_id": "abc",
                                "version_major": 2,
                                "version_minor": 0,
                            },
                            "text/plain": "VBox()",
                        },
                    )
                ],
            ),
        ]
    )
    nb.cells[2].execution_count = 7
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    found = "\n".join(store.problems(nb))
    assert "execution counts are [1, 2, 7]" in found
    assert "cell 0: calls plt.show() but stores no image" in found
    assert "cell 1: the exercise checker does not show the learner's" in found
    assert "cell 2: a widget is stored without its state" in found
    assert "'Python 3'" in found and "marks the notebook changed" in found


def test_prepare_clears_runs_upgrades_and_remarks_checker_cells():
    nb = new_notebook(
        cells=[
            new_code_cell(
                '# NBVAL_CHECK_OUTPUT\ncheck("is_repeat", is_repeat)',
                outputs=[stream("✓\n")],
                execution_count=4,
            ),
            new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(1)"),
        ]
    )
    nb.nbformat_minor = 4
    for cell in nb.cells:
        del cell["id"]
        cell.metadata["execution"] = {"iopub.status.busy": "2026-11-29T14:43:57Z"}
    notes = store.prepare(nb)
    assert len(notes) == 1 and notes[0].startswith("cell 0:")
    checker, other = nb.cells
    assert checker.source.startswith("# NBVAL_IGNORE_OUTPUT\n") and checker.outputs == []
    assert checker.execution_count is None and "execution" not in checker.metadata
    assert other.source.startswith("# NBVAL_CHECK_OUTPUT")  # not a checker: left as it is
    assert nb.nbformat_minor == 5 and all(c.get("id") for c in nb.cells)
    nbformat.validate(nb)


def test_a_stored_progress_bar_shows_its_final_state():
    state = {
        "bar": {
            "model_name": "HBoxModel",
            "state": {"children": ["IPY_MODEL_l", "IPY_MODEL_p", "IPY_MODEL_r"]},
        },
        "l": {"model_name": "HTMLModel", "state": {"value": "completions:\u2007100%"}},
        "p": {"model_name": "FloatProgressModel", "state": {"value": 200.0, "max": 200.0}},
        "r": {"model_name": "HTMLModel", "state": {"value": "\u2007200/200\u2007[03:39&lt;00:00]"}},
    }
    assert (
        store.progress_text("bar", state) == "completions: 100%|██████████| 200/200 [03:39<00:00]"
    )
    state["p"]["state"]["value"] = 100.0
    assert "|█████     |" in store.progress_text("bar", state)
    assert store.progress_text("l", state) is None  # not a bar


def test_a_figure_drawn_by_the_lab_must_be_stored_as_an_image():
    drawn = new_code_cell("fig = plot_cost(1000, 600, 100, 10)")  # assigned, so never displayed
    shown = new_code_cell(
        "plot_cost(1000, 600, 100, 10)",
        outputs=[
            new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})
        ],
    )
    found = store.problems(stored([drawn, shown]))
    assert found == [
        "cell 0: draws a figure (plot_...) but stores no image: end the cell with the "
        "call, or call plt.show()"
    ]


def test_a_checker_tagged_to_check_its_output_is_re_tagged_to_ignore_it():
    """The tag form of the same rule: a checker's stored output is the learner's message."""
    checker = new_code_cell(
        'check("is_repeat", is_repeat)', metadata={"tags": ["nbval-check-output"]}
    )
    other = new_code_cell("print(1)", metadata={"tags": ["nbval-check-output"]})
    nb = new_notebook(cells=[checker, other])
    notes = store.prepare(nb)
    assert checker.metadata["tags"] == ["nbval-ignore-output"] and len(notes) == 1
    assert other.metadata["tags"] == ["nbval-check-output"]  # not a checker: left as it is


@pytest.mark.parametrize(
    "path",
    sorted(
        [*(REPO / "notebooks").glob("*.ipynb"), *(REPO / "notebooks" / "bench").glob("*.ipynb")]
    ),
    ids=lambda p: str(p.relative_to(REPO / "notebooks")),
)
def test_nbval_markers_are_cell_tags_not_comments_a_learner_reads(path):
    nb = nbformat.read(path, as_version=4)
    marked = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "NBVAL_" in c.source]
    assert marked == [], f"{path.name}: cells {marked} carry an nbval comment; tag them instead"
