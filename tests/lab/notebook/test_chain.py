"""The chain of reference solutions through the eight core notebooks, as a learner's code flows.

Notebook by notebook: the agent is loaded from ``my_agent.py`` (every earlier piece must be
the learner's own), an edit exercise starts from ``%agent``'s text (the learner's own
earlier piece), the learner's cell is the reference piece typed in, its checker passes
and saves it, and the agent runs on the scripted models. At the end every piece is
theirs; then one is broken or deleted, and the reference stands in for it alone, saying
so in one line, while the agent still runs.
"""

import re

import pytest
from notebook_cells import notebook_namespace, run_cell

from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.protocol import EXEMPLARS
from react_lab.tools import default_tools
from react_lab.workshop.agent_file import (
    GIVEN_LINES,
    agent_source,
    check,
    load_agent,
    reference_source,
)
from react_lab.workshop.core_exercises import CORE, code_lines, pieces_before

QUESTION = "Has supplier invoice INV-2291 been paid?"
NOTEBOOKS = sorted({e.notebook for e in CORE.values()})


def exercises_of(notebook: int) -> list[str]:
    return [name for name, e in CORE.items() if e.notebook == notebook]


def saved_as(exercise: str) -> str:
    """The piece their file holds after ``exercise``: the reference they typed, or the lesson's
    lines added to the piece before (``%agent run_loop + guards``)."""
    e = CORE[exercise]
    if not e.given:
        return reference_source(exercise)
    add, _ = GIVEN_LINES[e.stub.split()[-1]]
    return add(saved_as(e.edits))[0]


def learners_cell(exercise: str) -> str:
    """The learner's exercise cell when they are done: an edit starts from ``%agent``'s text."""
    done = reference_source(exercise)
    e = CORE[exercise]
    if not e.edits:
        return done
    words = e.stub.split()  # "%agent run_loop", "... as run_native", "... + guards"
    started = agent_source(" ".join(words[1:]))
    if e.given:  # the lesson writes the lines: the cell is what %agent wrote, run as it is
        first, *rest = started.splitlines(keepends=True)
        assert first.startswith(f"# {e.stub.strip()}: your {words[1]} from my_agent.py, with")
        assert "".join(rest) == saved_as(exercise)
        assert code_lines(started, with_def=True) == code_lines(done, with_def=True)
        return started
    first, *rest = started.splitlines(keepends=True)
    assert first.startswith(f"# {e.stub.strip()}: your {words[1]} from my_agent.py")
    before = saved_as(e.edits)  # what they saved at the exercise this one edits
    if len(words) == 4:
        before = re.sub(rf"\bdef {words[1]}\b", f"def {words[3]}", before, count=1)
    assert "".join(rest) == before, "the edit does not start from the learner's own piece"
    return first + done  # the learner edits below the magic's comment line


def run_notebook(notebook: int, capsys) -> object:
    """One notebook as a learner runs it: load the agent, do each exercise, reload; the agent."""
    capsys.readouterr()
    agent = load_agent(notebook)
    out = capsys.readouterr().out.splitlines()
    before = list(dict.fromkeys(CORE[e].piece for e in pieces_before(notebook)))  # one line
    assert out == ([f"✓ {', '.join(before)}: yours (my_agent.py)"] if before else [])
    pieces = {n: getattr(agent, n) for n in dir(agent) if not n.startswith("_")}
    space = notebook_namespace(**pieces)  # the first cell's `observe = agent.observe`, ...
    for exercise in exercises_of(notebook):
        run_cell(learners_cell(exercise), space)
        assert check(exercise, space[CORE[exercise].piece]) is True
        said = capsys.readouterr().out
        assert said.startswith(f"✓ {exercise}: "), said
        assert said.endswith(" — saved to my_agent.py\n"), said
    return load_agent(notebook + 1)


def run_text_agent(agent, max_steps=6) -> tuple:
    """The text agent on a run with a repeat, a call the schema refuses, and no answer in time."""
    model = ScriptedModel(
        [
            " I look at the invoice.\nAction: find_invoice[INV-2291]",
            " Again.\nAction: find_invoice[INV-2291]",
            " Its July invoices.\nAction: list_invoices[cus_8812, July 1st]",
            " Its payments.\nAction: get_payments[INV-2291]",
            " It has no payments, so it is not paid.",
        ]
    )
    return agent.run_loop(QUESTION, model, default_tools(), max_steps=max_steps)


def test_the_reference_pieces_flow_through_the_eight_notebooks(agent_file, capsys):
    for notebook in NOTEBOOKS:
        agent = run_notebook(notebook, capsys)
        if notebook == 2:  # their loop on the scripted model, calling their observe
            model = ScriptedModel(
                [" I look.\nAction: find_invoice[INV-2291]", " Approved.\nAnswer: Not paid."]
            )
            answer, transcript = agent.run_loop(QUESTION, model, default_tools())
            assert answer == "Not paid." and '"status": "approved"' in transcript
        if notebook == 3:  # their loop, stop switched off: the forged observation stays in
            _, transcript = agent.run_loop(
                QUESTION,
                ScriptedModel(
                    [" I look.\nAction: find_invoice[INV-2291]\nObservation: {}\nAnswer: Paid."]
                ),
                default_tools(),
                stop=None,
            )
            assert agent.is_forged(transcript)

    capsys.readouterr()
    agent = load_agent(9)
    out = capsys.readouterr().out.splitlines()
    pieces = ["observe", "run_loop", "is_forged", "prompt_tokens_at_step", "provenance_guard"]
    assert out == [f"✓ {', '.join(pieces + ['run_native', 'pick_exemplar'])}: yours (my_agent.py)"]
    assert all(not hasattr(getattr(agent, e.piece), "reference") for e in CORE.values())

    answer, transcript = run_text_agent(agent, max_steps=4)
    assert answer == "[best effort] It has no payments, so it is not paid."
    assert "Observation: Error: that call already ran" in transcript  # their repeat guard
    # their schema check, in their observe, through their loop
    refused = next(ln for ln in transcript.splitlines() if "list_invoices was not run" in ln)
    assert "'July 1st' does not match" in refused and "'July 1st' is not a 'date'" in refused
    # their provenance guard, asked by their loop: a value only in a memo is no answer
    memo = ScriptedModel(
        [" I look.\nAction: find_invoice[INV-3704]", " The note.\nAnswer: 7315.00", " 7315"]
    )
    answer, transcript = agent.run_loop(
        "What is INV-3704's total?", memo, default_tools(), max_steps=2
    )
    assert answer is None and "Error: 7315.00 in the answer is in neither" in transcript

    leaked = (
        '<tool_call>{"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}}</tool_call>'
    )
    payments = {"name": "get_payments", "arguments": {"invoice_id": "INV-2291"}}
    model = ScriptedChatModel(
        [
            {"thought": "", "answer": leaked},
            {"thought": "Payments.", "tool_calls": [payments]},
            {"thought": "None.", "answer": "No, INV-2291 is not paid."},
        ]
    )
    answer, messages = agent.run_native(QUESTION, model, default_tools(), exemplars=[EXEMPLARS[1]])
    assert answer == "No, INV-2291 is not paid."
    ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"][-2:]  # after the exemplar's
    assert ids[0].startswith("leaked_") and ids[1].startswith("call_")  # the leaked call ran
    assert agent.pick_exemplar(QUESTION, list(EXEMPLARS)) is EXEMPLARS[1]


@pytest.mark.parametrize("how", ["broken", "deleted"])
def test_one_piece_broken_or_deleted_is_replaced_alone_and_the_agent_runs(agent_file, capsys, how):
    for notebook in NOTEBOOKS:
        run_notebook(notebook, capsys)
    text = agent_file.read_text()
    start = text.index("def observe(")
    end = text.index("\n\n\n", start)
    observe = text[start:end]
    unanchored = 're.search(r"Action: (\\w+)\\[(.*)\\]", text)'
    broken = observe.replace("ACTION_RE.search(text)", unanchored) if how == "broken" else ""
    assert broken != observe
    agent_file.write_text(text[:start] + broken + text[end:])

    capsys.readouterr()
    agent = load_agent(9)
    out = capsys.readouterr().out.splitlines()
    why = 'yours fails rule 1 "the action line"' if how == "broken" else "yours: not written yet"
    replaced = [line for line in out if not line.startswith("✓ ")]
    assert replaced == [f"→ observe: the reference stands in ({why})"]
    assert out[1] == (
        "✓ run_loop, is_forged, prompt_tokens_at_step, provenance_guard, run_native, "
        "pick_exemplar: yours (my_agent.py)"
    )
    assert agent.observe.reference == "observe_args"  # notebook 04's, with the argument check
    answer, transcript = run_text_agent(agent, max_steps=4)
    assert answer == "[best effort] It has no payments, so it is not paid."
    assert "list_invoices was not run" in transcript  # the reference observe checks the schema


def test_a_skipped_edit_leaves_the_reference_version_and_the_rest_runs(agent_file, capsys):
    """A learner who skipped 03's edit: their 02 loop fails rule 6; the reference stands in."""
    for notebook in (1, 2):
        run_notebook(notebook, capsys)
    capsys.readouterr()
    agent = load_agent(4)
    assert capsys.readouterr().out.splitlines() == [
        "✓ observe: yours (my_agent.py)",
        '→ run_loop: the reference stands in (yours fails rule 6 "stop as a parameter")',
        "→ is_forged: the reference stands in (yours: not written yet)",
    ]
    model = ScriptedModel([" Done.\nAnswer: No."])
    answer, _ = agent.run_loop(QUESTION, model, default_tools(), stop=None)
    assert answer == "No."
    assert agent_source("run_loop").startswith(
        "# %agent run_loop: your run_loop from my_agent.py (yours fails rule 6 "
        '"stop as a parameter"; the reference stood in)'
    )
