"""The notebooks in a real browser: JupyterLab 4 in headless Chromium, as a participant opens them.

JupyterLab starts as the workshop command starts it (scripts/workshop.sh: the notebooks
marked trusted, then ``jupyter lab``), on a copy of notebooks/. The tests run in file order
and share one server and one browser:

1. before anything runs, notebook 05's stored widgets render as controls (not as a line of
   ``VBox(children=...`` text) and its stored figures as images;
2. notebook 02 opens without being marked changed, and closes without asking to save;
3. the main learner interaction, their agent carried from notebook to notebook: the test
   writes ``observe`` into 01's exercise cell, as a learner types it, runs every cell on the
   embedded model and sees the checker's ✓ (which saves it to my_agent.py) and 01's second
   completion use it; then writes ``run_loop`` into 02's, runs every cell, and sees 02 load
   *their* ``observe``, the checker's ✓, their loop run on the model, and its right answer;
4. then 07: their loop migrated to ``run_native``, written into the stub cell (the
   ``%agent`` line replaced), every cell run: the checker's ✓, the diff of *their* two
   functions, and their native loop making a real tool call on the embedded model.

:func:`do_exercises` does a notebook as a learner does (open, write the exercises, Run All,
save); each learner's piece is in :data:`LEARNERS_CODE`.

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

from react_lab.workshop.core_exercises import CORE

pytestmark = pytest.mark.browser

# What a widget view shows when it cannot render: its text/plain, e.g. VBox(children=(IntSlider(...
RAW_WIDGET = re.compile(
    r"^(VBox|HBox|Box|GridBox|Tab|Accordion|IntSlider|FloatSlider|Button|"
    r"HTML|Label|Output|Dropdown|Checkbox|IntProgress|FloatProgress)\("
)
WIDGET_ERROR = "Error displaying widget"
RUN_ALL_TIMEOUT = 1800  # seconds per notebook on the embedded model, a busy 2-core machine


def assert_stored_outputs_render(driver, lab, name: str) -> dict:
    """Every stored widget of ``name`` renders as a control, every stored figure as an image."""
    stored = stored_outputs(lab.notebook_dir / name)

    def all_drawn():  # a widget view draws after its cell does: on a busy machine, seconds later
        shown = outputs(driver)
        return shown if sum(o["widget"] for o in shown) >= stored["widgets"] else None

    try:
        shown = wait_for(all_drawn, 60, f"the stored widgets of {name} to draw")
    except TimeoutError:
        shown = outputs(driver)  # the assertions below say what is missing
    raw = [o["text"][:80] for o in shown if RAW_WIDGET.match(o["text"]) and not o["widget"]]
    assert not raw, f"{name}: stored widgets shown as text (is the notebook trusted?): {raw}"
    assert sum(o["widget"] for o in shown) == stored["widgets"], (name, stored, shown)
    assert sum(o["image"] for o in shown) >= stored["images"], (name, stored)
    assert WIDGET_ERROR not in page_state(driver)["text"]
    return stored


def test_stored_widgets_and_figures_render_before_anything_runs(lab, driver, screenshots):
    open_notebook(driver, lab, "05_cost.ipynb")
    stored = assert_stored_outputs_render(driver, lab, "05_cost.ipynb")
    assert stored["widgets"] >= 1 and stored["images"] >= 1  # 05 stores sliders and plots
    scroll_to(driver, ".jp-OutputArea-output .jupyter-widgets")
    driver.save_screenshot(str(screenshots / "1_05_stored_widgets.png"))


def test_a_stored_notebook_opens_unchanged_and_closes_without_asking(lab, driver, screenshots):
    for note in lab.notes:
        print(note)
    state = open_notebook(driver, lab, "02_the_loop.ipynb")
    assert_stored_outputs_render(driver, lab, "02_the_loop.ipynb")
    scroll_to(driver, ".react-lab-quiz")
    driver.save_screenshot(str(screenshots / "2_02_opened.png"))
    time.sleep(3)  # give JupyterLab time to rewrite metadata, as it does on a kernel's start
    state = page_state(driver)
    assert state["dirty"] == 0, "opening 02_the_loop.ipynb marked it changed"
    driver.find_element(
        "css selector", ".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon"
    ).click()
    time.sleep(2)
    state = page_state(driver)
    assert state["dialogs"] == 0, "closing an unedited notebook asked something"
    assert state["panels"] == 0, "the notebook did not close"


#: What a learner writes into each exercise cell: their own code, not the reference's text.
#: A test of another notebook's exercise adds its piece here (07: "run_native").
LEARNERS_CODE = {
    "observe": r'''def observe(text, tools):
    """Run the completion's action; return the text the loop appends."""
    match = ACTION_RE.search(text)
    if not match:
        return "\nObservation: no action found; write Action: tool_name[arguments]\nThought:"
    args = [piece.strip() for piece in match.group(2).split(",")]
    result = call_tool(tools, match.group(1), args).text
    return "\nObservation: " + result + "\nThought:"''',
    "run_loop": r'''def run_loop(question, model, tools, exemplars=None, max_steps=6):
    """Run the text-protocol loop; return (answer or None, transcript)."""
    transcript = build_prompt(question, tools.values(), exemplars)
    for _ in range(max_steps):
        text = model.complete(transcript, stop=STOP, max_tokens=128).text
        transcript += text
        if answer := ANSWER_RE.search(text):
            return answer.group(1).strip(), transcript
        transcript += observe(text, tools)
    return None, transcript''',
    "run_native": r'''def run_native(question, model, tools, exemplars=None, max_steps=6):
    """My loop, migrated: messages, the schemas, tool calls; no text protocol."""
    messages = first_messages(question, tools, exemplars=exemplars or ())
    for _ in range(max_steps):
        reply = model.chat(messages, tools=tool_schemas(tools), max_tokens=128)
        calls, _, problem = reply_calls(reply, tools)
        if not calls and not problem:
            return reply.content, messages + [reply.message()]
        messages += tool_messages(reply, tools)
    return None, messages''',
}

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

# The index (among all cells) of the first cell whose input holds arguments[0], or -1.
_CELL_INDEX_JS = """
const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')];
return cells.findIndex(c => (c.querySelector('.jp-InputArea') || c)\
.textContent.includes(arguments[0]));
"""


def stub_marker(exercise: str) -> str:
    """Text only ``exercise``'s stored stub cell holds: the stub's last line (the ``raise
    NotImplementedError`` line with its hint, or an edit exercise's ``%agent ...`` line)."""
    return CORE[exercise].stub.strip().splitlines()[-1].strip()


def cell_index(driver, marker: str) -> int:
    """The index of the first cell whose input contains ``marker`` (-1 if none)."""
    return driver.execute_script(_CELL_INDEX_JS, marker)


def cell_outputs(driver, marker: str) -> str:
    """The rendered output text of the first code cell whose source contains ``marker``."""
    return driver.execute_script(
        """
      const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell')];
      const cell = cells.find(c => (c.querySelector('.jp-InputArea') || c)\
.textContent.includes(arguments[0]));
      return cell ? [...cell.querySelectorAll('.jp-OutputArea-output')]\
.map(e => e.textContent).join('\\n') : '';
    """,
        marker,
    )


def run_all(driver, lab, name: str, *, but: str | None = None) -> dict:
    """Run > Run All Cells; wait until every code cell ran and the kernel is idle; no errors.

    ``but``: text of one code cell the run leaves out, run instead as the rest of the suite
    runs it (under nbval): Run All Above Selected Cell with that cell selected, then Run
    Selected Cell and All Below from the cell after it. The cell left out keeps its stored
    prompt, and the cell after it takes the next number: ``[4] [5] [5] [6]`` shows the skip.
    """
    code = stored_outputs(lab.notebook_dir / name)["code"]
    want = [f"[{n}]:" for n in range(1, code + 1)]
    t0 = time.monotonic()
    if but is None:
        menu(driver, "Run", "runmenu:run-all")
        state = _wait_until_ran(driver, name, len(want))
    else:
        left_out = driver.execute_script(_CODE_INDEX_JS, but)
        assert left_out > 0, f"{name}: no code cell after the first holds {but!r}"
        stored = page_state(driver)["prompts"][left_out]  # it keeps the prompt it was stored with
        want = want[:left_out] + [stored] + want[left_out : code - 1]
        at = cell_index(driver, but)
        select_cell(driver, at)
        menu(driver, "Run", "notebook:run-all-above")
        _wait_until_ran(driver, name, left_out)
        select_cell(driver, at + 1)
        menu(driver, "Run", "notebook:run-all-below")
        state = _wait_until_ran(driver, name, code)
    print(f"{name}: ran in {time.monotonic() - t0:.0f} s" + (f", but {but!r}" if but else ""))
    errors = [
        o["text"][:500] for o in outputs(driver) if "error" in o["mime"] or "Traceback" in o["text"]
    ]
    assert state["prompts"] == want, (state["prompts"], want, errors)
    assert not errors
    assert WIDGET_ERROR not in state["text"]
    return state


# The index among the code cells of the first one whose input holds arguments[0], or -1.
_CODE_INDEX_JS = """
const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell')];
return cells.findIndex(c => (c.querySelector('.jp-InputArea') || c)\
.textContent.includes(arguments[0]));
"""


def select_cell(driver, index: int) -> None:
    """Select the ``index``-th cell (among all cells) as a click on its input prompt does."""
    from selenium.webdriver.common.by import By

    scroll_to(driver, ".jp-NotebookPanel .jp-Cell", index)
    cell = driver.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Cell")[index]
    cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt").click()
    wait_for(
        lambda: "jp-mod-selected" in (cell.get_attribute("class") or ""), 10, "the cell selected"
    )


def _wait_until_ran(driver, name: str, first: int) -> dict:
    """Wait until the first ``first`` code cells show a number and the kernel is idle."""

    def finished():
        s = page_state(driver)
        ran = all(p.startswith("[") and p[1:-2].isdigit() for p in s["prompts"][:first])
        busy = any("*" in p for p in s["prompts"]) or s["kernel"] != "Idle"
        return s if ran and not busy else None

    time.sleep(3)
    return wait_for(finished, RUN_ALL_TIMEOUT, f"the cells of {name} to run", interval=2)


def do_exercises(
    driver, lab, name: str, exercises: list[str], screenshots, *, but: str | None = None
) -> dict:
    """As a learner does a notebook: open ``name``, write their code (:data:`LEARNERS_CODE`)
    into each exercise's stub cell, run every cell (``but``: see :func:`run_all`), and save
    (so leaving it asks nothing)."""
    open_notebook(driver, lab, name)
    shut_down_kernels(lab, but=name)
    for exercise in exercises:
        marker = stub_marker(exercise)
        index = cell_index(driver, marker)
        assert index >= 0, f"{name}: no exercise cell holds {marker!r}"
        scroll_to(driver, ".jp-NotebookPanel .jp-Cell", index)
        assert driver.execute_script(_SET_CELL_JS, marker, LEARNERS_CODE[exercise]) == "ok"
        scroll_to(driver, ".jp-NotebookPanel .jp-Cell", index)
        driver.save_screenshot(str(screenshots / f"3_{name[:2]}_{exercise}_written.png"))
    state = run_all(driver, lab, name, but=but)
    menu(driver, "File", "docmanager:save")
    wait_for(lambda: page_state(driver)["dirty"] == 0, 30, f"{name} to be saved")
    return state


def shut_down_kernels(lab, but: str = "") -> None:
    """End the server's kernel sessions, but the one of notebook ``but``: one model in memory."""
    for session in lab.api("/api/sessions") or []:
        if not but or not session.get("path", "").endswith(but):
            lab.api(f"/api/sessions/{session['id']}", method="DELETE")


@pytest.mark.model
def test_write_observe_in_01_then_the_loop_in_02_and_see_the_checks_and_the_answer(
    lab, driver, screenshots
):
    do_exercises(driver, lab, "01_text_protocol.ipynb", ["observe"], screenshots)
    checked = cell_outputs(driver, 'check("observe", observe)')
    assert "✓ observe: 5/5 cases pass — saved to my_agent.py" in checked, checked
    loaded = cell_outputs(driver, 'load_agent("observe")')
    assert "✓ observe: yours (my_agent.py)" in loaded, loaded  # the second completion used it
    assert "def observe(text, tools):" in (lab.notebook_dir / "my_agent.py").read_text()

    do_exercises(driver, lab, "02_the_loop.ipynb", ["run_loop"], screenshots)
    first = cell_outputs(driver, 'show_minutes("02_the_loop.ipynb")')
    assert "✓ observe: yours (my_agent.py)" in first, first  # their 01 piece, loaded in 02
    checked = cell_outputs(driver, 'check("run_loop", run_loop)')
    assert "✓ run_loop: 6/6 cases pass — saved to my_agent.py" in checked, checked
    ran = cell_outputs(driver, 'agent = load_agent(["observe", "run_loop"])')
    assert "✓ observe, run_loop: yours (my_agent.py)" in ran, ran  # one line: one reason
    answered = cell_outputs(driver, "exemplars=[paid_exemplar], max_steps=2)")
    assert re.search(r"model's answer: No\b", answered), answered
    assert re.search(r"scored\s*: right", answered), answered
    scroll_to(
        driver,
        ".jp-NotebookPanel .jp-Cell",
        cell_index(driver, "exemplars=[paid_exemplar], max_steps=2)"),
    )
    driver.save_screenshot(str(screenshots / "4_02_the_loop_answers.png"))
    shut_down_kernels(lab)
    print("checker:", checked.strip()[:120])
    print("answer :", re.search(r"model's answer: .*", answered).group(0)[:160])


@pytest.mark.model
def test_migrate_the_loop_in_07_and_see_the_check_the_diff_and_a_call(lab, driver, screenshots):
    """After 01 and 02 (the test above), 07 as a learner does it: the stub's ``%agent`` line
    replaced by their run_native, the cells run on the embedded model."""
    # Every cell but the four-question comparison of the two loops: nbval runs that one (about
    # 50 s of the model here, and nothing below reads it).
    do_exercises(
        driver, lab, "07_native.ipynb", ["run_native"], screenshots, but="problems_table(text,"
    )
    checked = cell_outputs(driver, 'check("run_native", run_native)')
    assert "✓ run_native: 6/6 cases pass — saved to my_agent.py" in checked, checked
    diff = cell_outputs(driver, 'run_native = load_agent(["run_native"]).run_native')
    assert "✓ run_native: yours (my_agent.py)" in diff, diff
    assert "-def run_loop(" in diff and "+def run_native(" in diff, diff
    asked = cell_outputs(driver, "for shown in ([], exemplar_for(question)):")
    assert re.search(r"1 exemplar\(s\): calls \['find_invoice", asked), asked  # a real call
    scroll_to(
        driver,
        ".jp-NotebookPanel .jp-Cell",
        cell_index(driver, "for shown in ([], exemplar_for(question)):"),
    )
    driver.save_screenshot(str(screenshots / "5_07_native_calls.png"))
    shut_down_kernels(lab)
    print("checker:", checked.strip()[:120])
