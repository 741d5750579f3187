"""The learner's file: pieces saved in place, loaded fresh, checked; references stand in loudly."""

import os
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest
from notebook_cells import notebook_namespace, run_cell

from react_lab import agent as solutions
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.tools import default_tools
from react_lab.workshop import agent_file
from react_lab.workshop.agent_file import (
    DOWNLOAD_SENTENCE,
    HEADER,
    agent_source,
    download_link,
    load_agent,
    register_magic,
    save,
)
from react_lab.workshop.core_exercises import CORE

REPO = Path(__file__).resolve().parents[3]

OBSERVE = '''
def observe(text, tools):
    """Mine: the action line, the tool, the observation."""
    match = ACTION_RE.search(text)
    if match is None:
        return "\\nObservation: {no_action}\\nThought:"
    args = [a.strip() for a in match.group(2).split(",")]
    return "\\nObservation: " + call_tool(tools, match.group(1), args).text + "\\nThought:"
'''

LOOP = """
def run_loop(question, model, tools, exemplars=None, max_steps=6):
    transcript = build_prompt(question, tools.values(), exemplars)
    for _ in range(max_steps):
        text = model.complete(transcript, stop=STOP, max_tokens=128).text
        transcript += text
        if answer := ANSWER_RE.search(text):
            return answer.group(1){strip}, transcript
        transcript += observe(text, tools)
    return None, transcript
"""


def cell(source: str, space: dict | None = None):
    """Define the function in ``source`` as a notebook cell does; return it."""
    space = notebook_namespace() if space is None else space
    before = dict(space)
    run_cell(textwrap.dedent(source), space)
    (name,) = [n for n, v in space.items() if before.get(n) is not v and callable(v)]
    return space[name]


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


# --------------------------------------------------------------------------- save


def test_a_new_file_starts_with_the_header_and_the_piece(agent_file, capsys):
    mine = cell(OBSERVE.format(no_action="none"))
    assert save(mine) == agent_file
    assert lines(capsys) == ["saved to my_agent.py"]
    text = agent_file.read_text()
    assert text.startswith(HEADER)
    assert text.endswith(textwrap.dedent(OBSERVE.format(no_action="none")).lstrip())


def test_a_piece_saved_again_is_replaced_where_it_stands(agent_file, capsys):
    save(cell(OBSERVE.format(no_action="EARLIER")))
    save(cell("def is_forged(text):\n    return text.startswith('Observation')\n"))
    save(cell(OBSERVE.format(no_action="LATER")))
    text = agent_file.read_text()
    assert text.count("def observe(") == 1 and "LATER" in text and "EARLIER" not in text
    assert text.index("def observe(") < text.index("def is_forged(")  # in place, not at the end
    compile(text, str(agent_file), "exec")


def test_an_edit_is_saved_under_the_piece_name(agent_file, capsys):
    save(cell("def run_native(question, model, tools):\n    return None, []\n"), "run_loop")
    assert "def run_loop(question, model, tools):" in agent_file.read_text()
    assert "run_native" not in agent_file.read_text()


def test_the_imports_a_piece_uses_are_added_and_other_names_are_named(agent_file, capsys):
    space = notebook_namespace()
    run_cell(
        "from react_lab.protocol import OBSERVATION\nfrom react_lab.cost import count_tokens\n"
        "import collections\nlimit = 3\n",
        space,
    )
    save(
        cell(
            "def short(text):\n    c = collections.Counter(text)\n"
            "    return count_tokens(text) < limit and OBSERVATION not in text\n",
            space,
        )
    )
    text = agent_file.read_text()
    assert "from react_lab.protocol import OBSERVATION\n" in text
    assert "from react_lab.cost import count_tokens\n" in text and "import collections\n" in text
    assert text.index("import collections") < text.index("def short(")
    assert lines(capsys) == [
        "saved to my_agent.py; it uses limit, which my_agent.py does not define: define it "
        "inside short, or add it to my_agent.py yourself"
    ]


def test_the_helpers_a_piece_calls_are_saved_with_it(agent_file, capsys):
    space = notebook_namespace()
    run_cell("def _strip_all(items):\n    return [_one(i) for i in items]\n", space)
    run_cell("def _one(item):\n    return item.strip()\n", space)
    observe = cell(
        """
        def observe(text, tools):
            return " ".join(_strip_all(text.split(",")))
        """,
        space,
    )
    save(observe)
    text = agent_file.read_text()
    assert "def observe(" in text and "def _strip_all(" in text and "def _one(" in text
    assert lines(capsys) == ["saved to my_agent.py, with _strip_all, _one (yours, which it calls)"]
    space = {}  # the file runs on its own: the helpers are in it
    exec(compile(text, str(agent_file), "exec"), space)
    assert space["observe"](" a, b ", None) == "a b"


@pytest.mark.parametrize(
    "fn, why",
    [
        (lambda text: text, "not a function written with def"),
        (len, "not a function written with def"),
    ],
)
def test_what_cannot_be_saved_is_said_not_raised(agent_file, capsys, fn, why):
    assert save(fn, "observe") is None
    out = capsys.readouterr().out
    assert out.startswith("not saved:") and why in out and not agent_file.exists()


def test_a_file_that_no_longer_parses_is_left_alone(agent_file, capsys):
    agent_file.write_text("def observe(text, tools:\n")
    assert save(cell(OBSERVE.format(no_action="x"))) is None
    assert lines(capsys) == [
        "not saved: my_agent.py does not parse (line 1: '(' was never "
        "closed); fix it there, or delete it to start it again"
    ]
    assert agent_file.read_text() == "def observe(text, tools:\n"


def test_the_saved_file_imports_on_its_own(agent_file, capsys):
    """``import my_agent`` in a fresh Python: the header holds the imports the pieces use."""
    pieces = ("observe_args", "run_loop_guards", "run_native")
    for name in pieces:
        save(cell(agent_file_source(name)), CORE[name].piece)
    script = (
        "import my_agent; from react_lab.tools import default_tools; "
        "print(my_agent.observe('Action: find_invoice[INV-2291]', default_tools())[:40])"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=agent_file.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith('\nObservation: {"invoice_id": "INV-2291"')


def agent_file_source(exercise: str) -> str:
    """The reference of ``exercise`` as the learner's cell would hold it."""
    return agent_file.reference_source(exercise)


def test_the_header_imports_every_name_the_references_use():
    space: dict = {}
    exec(HEADER, space)
    needed = {name for name in agent_file._reference_names()}
    assert needed <= set(space), needed - set(space)


# --------------------------------------------------------------------------- load_agent


def test_without_a_file_every_piece_is_the_reference(agent_file, capsys):
    agent = load_agent(3)
    assert lines(capsys) == [
        "→ observe, run_loop: the reference stands in (my_agent.py not found)",
    ]
    assert agent.run_loop.reference == "run_loop" and agent.observe.reference == "observe"
    answer, _ = agent.run_loop(
        "Has supplier invoice INV-2291 been paid?",
        ScriptedModel([" I know.\nAnswer: No."]),
        default_tools(),
    )
    assert answer == "No."


def test_a_piece_not_yet_written_and_a_failing_one_say_why_in_one_line(agent_file, capsys):
    save(cell(LOOP.format(strip="")))  # the answer's line is not stripped: rule 3
    capsys.readouterr()
    agent = load_agent(["run_loop"])  # and the observe it calls
    assert lines(capsys) == [
        "→ observe: the reference stands in (yours: not written yet)",
        '→ run_loop: the reference stands in (yours fails rule 3 "stop on an answer")',
    ]
    assert agent.run_loop.reference == "run_loop"


def test_passing_pieces_are_the_learners_own(agent_file, capsys):
    save(cell(OBSERVE.format(no_action="mine")))
    save(cell(LOOP.format(strip=".strip()")))
    capsys.readouterr()
    agent = load_agent(3)
    assert lines(capsys) == ["✓ observe, run_loop: yours (my_agent.py)"]
    assert agent.run_loop.__code__.co_filename == str(agent_file)
    assert not hasattr(agent.run_loop, "reference")


def test_the_pieces_call_each_other_through_the_agent(agent_file, capsys):
    """Their loop calls their observe if it passed, else the reference's; and the other way."""
    question, tools = "Has supplier invoice INV-2291 been paid?", default_tools()
    script = [" I am not sure.", " Done.\nAnswer: No."]

    def transcript(agent):
        return agent.run_loop(question, ScriptedModel(script), tools)[1]

    save(cell(OBSERVE.format(no_action="my own words")))
    save(cell(LOOP.format(strip=".strip()")))
    assert "Observation: my own words" in transcript(load_agent(3))

    save(cell(OBSERVE.format(no_action="")))  # an empty observation: rule 5
    capsys.readouterr()
    agent = load_agent(3)
    assert lines(capsys)[0] == (
        '→ observe: the reference stands in (yours fails rule 5 "no action line")'
    )
    assert "Observation: Error: no action line" in transcript(agent)  # their loop, its observe

    save(cell(OBSERVE.format(no_action="my own words")))
    save(cell(LOOP.format(strip="")))  # their loop fails: the reference loop calls their observe
    capsys.readouterr()
    agent = load_agent(3)
    assert lines(capsys) == [
        "✓ observe: yours (my_agent.py)",
        '→ run_loop: the reference stands in (yours fails rule 3 "stop on an answer")',
    ]
    assert "Observation: my own words" in transcript(agent)


def test_each_load_reads_the_file_afresh(agent_file, capsys):
    """Two saves in one second, of the same size: the second loads (no stale module, no .pyc)."""
    save(cell(OBSERVE.format(no_action="AAAA")))
    first = load_agent(["observe"]).observe(" hmm", {})
    save(cell(OBSERVE.format(no_action="BBBB")))
    os.utime(agent_file, (time.time(), agent_file.stat().st_mtime))  # same mtime second, same size
    second = load_agent(["observe"]).observe(" hmm", {})
    assert "AAAA" in first and "BBBB" in second
    assert not list(agent_file.parent.glob("__pycache__")) and "my_agent" not in sys.modules


@pytest.mark.parametrize(
    "text, why",
    [
        (
            "def observe(text, tools:\n",
            "my_agent.py does not run: SyntaxError at line 1: '(' was never closed",
        ),
        (
            "import json\n\nx = 1 / 0\n",
            "my_agent.py does not run: ZeroDivisionError at line 3: division by zero",
        ),
    ],
)
def test_a_file_that_does_not_run_leaves_the_references(agent_file, capsys, text, why):
    agent_file.write_text(text)
    agent = load_agent(["observe"])
    assert lines(capsys) == [f"→ observe: the reference stands in ({why})"]
    assert agent.observe.reference == "observe"


def test_a_newer_version_of_a_piece_still_counts_as_theirs(agent_file, capsys):
    """After notebook 06 their run_loop has guards; notebook 03 run again takes it, and says so."""
    for name in ("observe", "run_loop_guards"):
        save(cell(agent_file_source(name)), CORE[name].piece)
    capsys.readouterr()
    load_agent(["run_loop"])  # notebook 02's loop, and the observe it calls
    assert lines(capsys) == [
        "✓ observe: yours (my_agent.py)",
        "✓ run_loop: yours (my_agent.py, as of notebook 06)",
    ]


def test_what_a_piece_prints_while_it_is_checked_is_not_shown(agent_file, capsys):
    save(
        cell(
            'def is_forged(text):\n    print("checking", text)\n'
            '    return re.search(r"^Observation", text, re.M) is not None\n'
        )
    )
    capsys.readouterr()
    load_agent(["is_forged"])
    assert lines(capsys) == ["✓ is_forged: yours (my_agent.py)"]


def test_in_solutions_mode_the_references_are_checked_and_used(agent_file, monkeypatch, capsys):
    save(cell(OBSERVE.format(no_action="mine")))
    capsys.readouterr()
    monkeypatch.setenv("REACT_LAB_SOLUTIONS", "1")
    agent = load_agent(["observe"])
    assert lines(capsys) == ["→ observe: the reference stands in (solutions mode)"]
    assert agent.observe.reference == "observe"
    monkeypatch.setattr(solutions, "observe", lambda text, tools: "wrong")
    with pytest.raises(AssertionError, match="reference solution for observe fails"):
        load_agent(["observe"])


def test_an_unknown_exercise_is_a_notebook_authors_error():
    with pytest.raises(ValueError, match="unknown exercise 'parse_action'"):
        load_agent(["parse_action"])


def test_every_piece_is_checked_after_the_pieces_it_calls():
    order = [e.name for e in agent_file.exercises_for(9)]
    assert order.index("observe_args") < order.index("run_loop_provenance")
    assert order.index("provenance_guard") < order.index("run_loop_provenance")
    assert not {"check_args", "is_repeat", "best_effort"} & set(order)  # folded into 04 and 06


# --------------------------------------------------------------------------- %agent


def test_agent_shows_their_piece_or_the_reference_saying_so(agent_file, capsys):
    text = agent_source("observe")
    assert text.splitlines()[0] == (
        "# %agent observe: the reference observe stands in "
        "(my_agent.py not found); edit it, then run this cell"
    )
    assert "def observe(text, tools):" in text
    save(cell(OBSERVE.format(no_action="mine")))
    text = agent_source("observe")
    assert text.splitlines()[0] == (
        "# %agent observe: your observe from my_agent.py; edit it, then run this cell"
    )
    assert text.endswith(textwrap.dedent(OBSERVE.format(no_action="mine")).lstrip())


def test_agent_shows_the_version_the_last_load_chose_and_renames(agent_file, capsys):
    load_agent(7)
    text = agent_source("run_loop as run_native")
    assert "def run_native(question, model, tools, exemplars=None, max_steps=6, stop=STOP):" in text
    assert "call.groups() in calls" in text  # notebook 06's loop: the one notebook 07 edits
    space = notebook_namespace()
    run_cell(text, space)  # the cell runs as it stands
    assert callable(space["run_native"])


@pytest.mark.parametrize("line", ["", "nothing", "run_loop as", "run_loop as 2x", "observe to x"])
def test_agent_with_a_wrong_name_says_how_to_call_it(line):
    with pytest.raises(ValueError, match="usage: %agent NAME|is not a Python name"):
        agent_source(line)


def test_the_magic_is_registered_only_inside_ipython(agent_file, monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert register_magic() is False

    class Shell:
        def __init__(self):
            self.magics, self.next_input = {}, None

        def register_magic_function(self, fn, magic_kind, magic_name):
            self.magics[magic_name] = (magic_kind, fn)

        def set_next_input(self, text, replace=False):
            self.next_input = (text, replace)

    shell = Shell()
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert register_magic() is True
    kind, magic = shell.magics["agent"]
    assert kind == "line"
    magic("is_forged")
    text, replace = shell.next_input
    assert replace is True and "def is_forged(text):" in text


def test_the_magic_in_a_real_ipython_shell_saves_and_loads_a_cell(agent_file, capsys):
    """In IPython a cell's function has its source: the checker saves it, %agent puts it back."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        # In a kernel the package is first imported inside IPython, which registers %agent;
        # here it was imported before the shell existed, so register as that import does.
        shell.run_cell(
            "from react_lab.workshop import check, register_magic\nimport re\nregister_magic()"
        )
        shell.run_cell(
            'def is_forged(text):\n    """Mine."""\n'
            '    return re.search(r"^Observation", text, re.M) is not None\n'
        )
        shell.run_cell('check("is_forged", is_forged)')
        assert "✓ is_forged: 8/8 cases pass — saved to my_agent.py" in capsys.readouterr().out
        shell.run_cell("%agent is_forged")
        assert shell.rl_next_input.startswith("# %agent is_forged: your is_forged from my_agent.py")
        assert '"""Mine."""' in shell.rl_next_input
    finally:
        InteractiveShell.clear_instance()


# --------------------------------------------------------------------------- download


def test_the_download_link_says_why_and_points_at_the_file(agent_file, capsys, monkeypatch):
    assert download_link() is None
    assert lines(capsys) == ["Nothing is saved yet: my_agent.py appears when a checker passes."]
    save(cell(OBSERVE.format(no_action="x")))
    monkeypatch.chdir(agent_file.parent)
    link = download_link()
    assert DOWNLOAD_SENTENCE in link._repr_html_() and "href='my_agent.py'" in link._repr_html_()
    assert repr(link) == f"{DOWNLOAD_SENTENCE} {agent_file}"


def test_the_magic_as_a_new_name_binds_the_reference_until_the_learner_runs_theirs(
    agent_file, capsys
):
    """``%agent run_loop as run_native`` headless: the cell's new text is dropped, the checker
    still runs and says "not written yet" (the name is the reference, marked so)."""
    from IPython.core.interactiveshell import InteractiveShell

    from react_lab.workshop.exercises import is_reference

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("from react_lab.workshop import check, register_magic\nregister_magic()")
        shell.run_cell("%agent run_loop as run_native")
        assert shell.rl_next_input.startswith("# %agent run_loop as run_native: the reference")
        assert is_reference(shell.user_ns["run_native"])
        capsys.readouterr()
        shell.run_cell('check("run_native", run_native)')
        assert capsys.readouterr().out.startswith("✎ run_native: not written yet")
        shell.user_ns["run_native"] = mine = lambda *a: None
        shell.run_cell("%agent run_loop as run_native")
        assert shell.user_ns["run_native"] is mine  # a name the learner defined is left alone
    finally:
        InteractiveShell.clear_instance()
