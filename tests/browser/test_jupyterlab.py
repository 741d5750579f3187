"""The notebooks in a real browser: JupyterLab 4 in headless Chromium, as a participant opens them.

JupyterLab starts as the workshop command starts it (scripts/workshop.sh: the notebooks
marked trusted, then ``jupyter lab``), on a copy of notebooks/. The tests run in file order
and share one server and one browser:

1. before anything runs, notebook 05's stored widgets render as controls (not as a line of
   ``VBox(children=...`` text) and its stored figures as images;
2. notebook 02 opens without being marked changed, and closes without asking to save;
3. the main learner interaction: in notebook 02 the test writes a loop into the exercise
   cell, as a learner types it, runs every cell on the embedded model, and sees the
   checker's ✓, the notebook running the learner's own loop, and the model's right answer.

Screenshots of each stage go to a directory printed at the start (REACT_LAB_SCREENSHOTS
keeps them). Run: ``flock /tmp/react_lab_model.lock .venv/bin/python -m pytest tests/browser``.
"""
from __future__ import annotations

import re
import time

import pytest
from labdriver import (
    menu,
    open_notebook,
    outputs,
    page_state,
    scroll_to,
    stored_outputs,
    wait_for,
)

pytestmark = pytest.mark.browser

# What a widget view shows when it cannot render: its text/plain, e.g. VBox(children=(IntSlider(...
RAW_WIDGET = re.compile(r"^(VBox|HBox|Box|GridBox|Tab|Accordion|IntSlider|FloatSlider|Button|"
                        r"HTML|Label|Output|Dropdown|Checkbox|IntProgress|FloatProgress)\(")
WIDGET_ERROR = "Error displaying widget"
RUN_ALL_TIMEOUT = 900      # seconds: notebook 02 on the embedded model, a busy 2-core machine


def assert_stored_outputs_render(driver, lab, name: str) -> dict:
    """Every stored widget of ``name`` renders as a control, every stored figure as an image."""
    stored = stored_outputs(lab.notebook_dir / name)
    shown = outputs(driver)
    raw = [o["text"][:80] for o in shown if RAW_WIDGET.match(o["text"]) and not o["widget"]]
    assert not raw, f"{name}: stored widgets shown as text (is the notebook trusted?): {raw}"
    assert sum(o["widget"] for o in shown) == stored["widgets"], (name, stored, shown)
    assert sum(o["image"] for o in shown) >= stored["images"], (name, stored)
    assert WIDGET_ERROR not in page_state(driver)["text"]
    return stored


def test_stored_widgets_and_figures_render_before_anything_runs(lab, driver, screenshots):
    open_notebook(driver, lab, "05_cost.ipynb")
    stored = assert_stored_outputs_render(driver, lab, "05_cost.ipynb")
    assert stored["widgets"] >= 1 and stored["images"] >= 1   # 05 stores sliders and plots
    scroll_to(driver, ".jp-OutputArea-output .jupyter-widgets")
    driver.save_screenshot(str(screenshots / "1_05_stored_widgets.png"))


def test_a_stored_notebook_opens_unchanged_and_closes_without_asking(lab, driver, screenshots):
    for note in lab.notes:
        print(note)
    state = open_notebook(driver, lab, "02_the_loop.ipynb")
    assert_stored_outputs_render(driver, lab, "02_the_loop.ipynb")
    scroll_to(driver, ".react-lab-quiz")
    driver.save_screenshot(str(screenshots / "2_02_opened.png"))
    time.sleep(3)   # give JupyterLab time to rewrite metadata, as it does on a kernel's start
    state = page_state(driver)
    assert state["dirty"] == 0, "opening 02_the_loop.ipynb marked it changed"
    driver.find_element("css selector", ".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()
    time.sleep(2)
    state = page_state(driver)
    assert state["dialogs"] == 0, "closing an unedited notebook asked something"
    assert state["panels"] == 0, "the notebook did not close"


#: Notebook 02's exercise cell (its fourth), and what a learner writes into it: their own loop, not the reference's text.
EXERCISE_CELL = 3
LEARNERS_LOOP = '''def run_loop(question, model, tools, exemplars=None, max_steps=6):
    """Run the text-protocol loop; return (answer or None, transcript)."""
    transcript = build_prompt(question, tools.values(), exemplars)
    for _ in range(max_steps):
        text = model.complete(transcript, stop=STOP, max_tokens=128).text
        transcript += text
        if "Answer:" in text:
            return text.split("Answer:", 1)[1].split("\\n")[0].strip(), transcript
        match = ACTION_RE.search(text)
        if match:
            args = [piece.strip() for piece in match.group(2).split(",")]
            observation = call_tool(tools, match.group(1), args).text
        else:
            observation = "No action found: write Action: tool_name[arguments]"
        transcript += "\\nObservation: " + observation + "\\nThought:"
    return None, transcript'''

# Put text into a cell's editor the way typing does: a CodeMirror 6 transaction on the cell's
# own editor view, which JupyterLab's binding copies into the notebook model.
_SET_CELL_JS = """
const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell')];
const cell = cells.find(c => c.textContent.includes(arguments[0]));
if (!cell) return 'no cell holds ' + arguments[0];
const content = cell.querySelector('.cm-content');
const found = content && content.cmView;
const view = found && ((found.rootView && found.rootView.view) || found.view);
if (!view) return 'no CodeMirror view in the cell';
view.dispatch({changes: {from: 0, to: view.state.doc.length, insert: arguments[1]}});
return view.state.doc.toString() === arguments[1] ? 'ok' : 'the editor did not take the text';
"""


def cell_outputs(driver, marker: str) -> str:
    """The rendered output text of the first code cell whose source contains ``marker``."""
    return driver.execute_script("""
      const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell')];
      const cell = cells.find(c => (c.querySelector('.jp-InputArea') || c).textContent.includes(arguments[0]));
      return cell ? [...cell.querySelectorAll('.jp-OutputArea-output')].map(e => e.textContent).join('\\n') : '';
    """, marker)


@pytest.mark.model
def test_write_the_loop_run_it_and_see_the_check_and_the_answer(lab, driver, screenshots):
    name = "02_the_loop.ipynb"
    open_notebook(driver, lab, name)
    scroll_to(driver, ".jp-NotebookPanel .jp-Cell", EXERCISE_CELL)
    assert driver.execute_script(_SET_CELL_JS, "raise NotImplementedError  # your code", LEARNERS_LOOP) == "ok"
    scroll_to(driver, ".jp-NotebookPanel .jp-Cell", EXERCISE_CELL)
    driver.save_screenshot(str(screenshots / "3_02_loop_written.png"))
    menu(driver, "Run", "runmenu:run-all")   # Run > Run All Cells
    code = stored_outputs(lab.notebook_dir / name)["code"]
    t0 = time.monotonic()

    def finished():
        s = page_state(driver)
        busy = any("*" in p for p in s["prompts"]) or s["kernel"] != "Idle"
        return None if busy or s["prompts"][0] in ("[ ]:", "") else s

    time.sleep(3)
    state = wait_for(finished, RUN_ALL_TIMEOUT, "Run All Cells to finish", interval=2)
    print(f"Run All Cells: {time.monotonic() - t0:.0f} s")
    errors = [o["text"][:500] for o in outputs(driver) if "error" in o["mime"] or "Traceback" in o["text"]]
    assert state["prompts"] == [f"[{n}]:" for n in range(1, code + 1)], (state["prompts"], errors)
    assert not errors
    assert WIDGET_ERROR not in state["text"]

    checked = cell_outputs(driver, 'check("run_loop", run_loop)')
    assert "✓ run_loop: 7/7 cases pass" in checked, checked
    chosen = cell_outputs(driver, 'loop = choose("run_loop", run_loop)')
    assert "using your run_loop" in chosen, chosen
    answered = cell_outputs(driver, "second = loop(question, model, tools, exemplars=[paid_exemplar])")
    assert "=> answer: No" in answered and "scored: right" in answered, answered
    scroll_to(driver, ".jp-NotebookPanel .jp-Cell", EXERCISE_CELL + 8)
    driver.save_screenshot(str(screenshots / "4_02_the_loop_answers.png"))
    print("checker:", checked.strip()[:120])
    print("answer :", answered.strip().splitlines()[-1][:160])
