"""Every save of the learner's file is kept; an earlier checker never replaces a newer piece."""

import inspect
import re
import textwrap

from notebook_cells import notebook_namespace, run_cell

from react_lab import agent as solutions
from react_lab.workshop import agent_versions, restore_version
from react_lab.workshop.agent_file import check, load_agent, save, versions_folder


def mine(exercise: str, space: dict | None = None):
    """The reference of ``exercise`` as a learner's cell defines it: named as its piece."""
    from react_lab.workshop.core_exercises import CORE

    piece = CORE[exercise].piece
    source = textwrap.dedent(inspect.getsource(getattr(solutions, exercise)))
    source = re.sub(rf"\bdef {exercise}\b", f"def {piece}", source, count=1)
    space = notebook_namespace(observe=solutions.observe) if space is None else space
    run_cell(source, space)
    return space[piece]


def said(capsys) -> str:
    return capsys.readouterr().out.strip()


def the_run_loop(agent_file) -> str:
    text = agent_file.read_text()
    return text[text.index("def run_loop(") :]


def test_every_save_is_kept_as_a_version_named_by_counter_piece_and_exercise(agent_file, capsys):
    assert check("observe", mine("observe")) is True
    assert check("run_loop", mine("run_loop")) is True
    save(mine("is_forged"))
    names = [v.path.name for v in agent_versions()]
    assert names == ["001-observe-observe.py", "002-run_loop-run_loop.py", "003-is_forged-save.py"]
    assert (
        agent_versions()[-1].path.parent
        == versions_folder()
        == agent_file.parent / ("my_agent.versions")
    )
    # each version is the whole file as that save made it
    assert "def run_loop(" not in agent_versions()[0].path.read_text()
    assert agent_versions()[-1].path.read_text() == agent_file.read_text()
    assert [v.number for v in agent_versions("run_loop")] == [2]
    assert repr(agent_versions()).splitlines()[0] == "version 1: observe, saved by observe"


def test_an_earlier_checker_keeps_the_newer_piece_and_says_how_to_take_its_own(agent_file, capsys):
    """02's checker run again after 06 saved the guarded loop: the guarded loop stays."""
    check("observe", mine("observe"))
    check("run_loop_guards", mine("run_loop_guards"))
    guarded = the_run_loop(agent_file)
    capsys.readouterr()
    assert check("run_loop", mine("run_loop")) is True
    line = said(capsys)
    assert line == (
        "✓ run_loop: 6/6 cases pass — kept your newer run_loop in my_agent.py (it passes "
        "run_loop_guards, notebook 06); this one is version 3: restore_version(3) puts it "
        "there instead"
    )
    assert the_run_loop(agent_file) == guarded
    load_agent(["run_loop_guards"])  # the guarded loop runs, the learner's own
    assert said(capsys) == "✓ observe, run_loop: yours (my_agent.py)"
    assert "max_steps + 1" not in guarded and "[best effort]" in guarded


def test_an_earlier_observe_keeps_the_schema_checked_one(agent_file, capsys):
    check("observe_args", mine("observe_args"))
    checked = agent_file.read_text()
    capsys.readouterr()
    assert check("observe", mine("observe")) is True
    assert "kept your newer observe in my_agent.py (it passes observe_args, notebook 04)" in said(
        capsys
    )
    assert agent_file.read_text() == checked


def test_a_piece_that_passes_the_later_exercise_too_is_saved_as_usual(agent_file, capsys):
    check("run_loop_guards", mine("run_loop_guards"))
    capsys.readouterr()
    # the schema-checked observe passes 01's checker and 04's: it is no older than the file's
    check("observe", mine("observe"))
    assert check("observe", mine("observe_args")) is True
    assert said(capsys).endswith("— saved to my_agent.py")
    assert "jsonschema.Draft202012Validator" in agent_file.read_text()
    # the same source saved again replaces itself
    assert check("run_loop_guards", mine("run_loop_guards")) is True
    assert said(capsys).endswith("— saved to my_agent.py")


def test_restore_version_puts_a_piece_back_and_keeps_the_one_it_replaces(agent_file, capsys):
    check("observe", mine("observe"))
    check("run_loop_guards", mine("run_loop_guards"))
    check("run_loop", mine("run_loop"))  # kept as version 3, not in the file
    guarded = the_run_loop(agent_file)
    capsys.readouterr()
    assert restore_version(3) == agent_file
    assert said(capsys) == (
        "restored version 3: run_loop, saved by run_loop into my_agent.py; "
        "the run_loop it replaces is version 2"
    )
    assert "[best effort]" not in the_run_loop(agent_file)
    restore_version(2)
    assert the_run_loop(agent_file) == guarded
    assert said(capsys).endswith("the run_loop it replaces is version 3")
    assert len(agent_versions()) == 3  # restoring a kept version keeps nothing new


def test_a_piece_edited_by_hand_is_kept_before_a_restore_replaces_it(agent_file, capsys):
    check("observe", mine("observe"))
    edited = agent_file.read_text().replace('"""Run the', '"""Edited by hand: run the')
    agent_file.write_text(edited)
    restore_version(1)
    assert said(capsys).endswith("the observe it replaces is version 2")
    assert agent_versions()[-1].path.name == "002-observe-edited.py"
    assert agent_versions()[-1].path.read_text() == edited
    assert "Edited by hand" not in agent_file.read_text()


def test_a_restore_brings_the_imports_its_piece_needs(agent_file, capsys):
    space = notebook_namespace()
    run_cell("import collections\n", space)
    run_cell("def is_forged(text):\n    return bool(collections.Counter(text))\n", space)
    save(space["is_forged"])
    agent_file.unlink()  # a new session: the file is gone, the versions are not
    restore_version(1)
    text = agent_file.read_text()
    assert "import collections\n" in text and "def is_forged(" in text
    exec(compile(text, str(agent_file), "exec"), {})


def test_restoring_a_version_that_is_not_there_says_which_are(agent_file, capsys):
    assert restore_version(1) is None
    assert said(capsys) == "no version 1; the versions kept: none yet (agent_versions() lists them)"
    assert repr(agent_versions()) == "no versions yet: my_agent.versions fills as checkers pass"
    check("observe", mine("observe"))
    capsys.readouterr()
    assert restore_version(7) is None
    assert said(capsys) == "no version 7; the versions kept: 1 (agent_versions() lists them)"


def test_a_notebook_run_again_after_a_later_one_gets_the_piece_as_that_notebook_had_it(
    agent_file, capsys
):
    """02 re-run after 06: the loop of 02 (its kept version), not the guarded one in the file;
    and 06's own load still gets the guarded loop from the file."""
    check("observe", mine("observe"))
    check("run_loop", mine("run_loop"))
    check("run_loop_guards", mine("run_loop_guards"))
    capsys.readouterr()
    early = load_agent(["run_loop"]).run_loop
    lines = said(capsys).splitlines()
    assert lines == [
        "✓ observe: yours (my_agent.py)",
        "✓ run_loop: yours as of notebook 02 (my_agent.versions/002-run_loop-run_loop.py)",
    ]
    assert "[best effort]" not in inspect.getsource(early)
    late = load_agent(["run_loop_guards"]).run_loop
    assert said(capsys) == "✓ observe, run_loop: yours (my_agent.py)"
    assert "[best effort]" in inspect.getsource(late)
