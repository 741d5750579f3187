"""The eight core notebooks as stored, 01 to 08 in one folder: a learner's code flows through them.

CI runs each core notebook solved, two at a time in kernels of their own, so no run of it
carries a learner's code from one notebook to the next. This test does, without the model:
one ``my_agent.py`` (``REACT_LAB_AGENT_FILE``), the stored notebooks read in order, and of
each the cells a learner's code flows through, by this rule:

* an **exercise cell** (its metadata names the exercise) is the learner's cell: a stub
  (stored unsolved) becomes the reference solution's source, typed in as text; an edit's
  ``%agent`` cell becomes what the magic writes, the learner's own piece from
  ``my_agent.py``, with its body then typed over by the reference's;
* a **given cell** (``%agent run_loop + guards``: lines the lesson writes into the learner's
  loop) becomes what the magic writes, and runs as it is: the learner types nothing;
* a **checker cell** (``check("name", ...)``) runs as stored;
* a cell that **names load_agent** runs its imports, each ``load_agent(...)`` call (bound
  when the statement is ``name = load_agent(...)`` or ``name = load_agent(...).piece``),
  and the assignments that pass on only what those returned (``observe, run_loop =
  agent.observe, agent.run_loop``); a tuple assignment counts as one per name.

Nothing else runs: the model (``load_model``, ``warm_up``, every live run), the
experiments, the figures and the quizzes carry no piece of the learner's. At every notebook
the test asserts that every piece it loads is the learner's own (``✓ observe: yours
(my_agent.py)``), that every earlier piece its cells name is loaded so first, that every
piece its namespace holds is the learner's, that an edit starts from the learner's saved
piece, and that each checker saves what the learner typed into the file. Two more tests
break the chain (a saved piece broken, a notebook that stops loading one) and see it fail.
"""

from __future__ import annotations

import ast
import io
import re
from contextlib import redirect_stdout
from pathlib import Path

import nbformat
import pytest
from notebook_cells import run_cell

from react_lab.workshop.agent_file import GIVEN_LINES, agent_source, reference_source
from react_lab.workshop.core_exercises import CORE

NOTEBOOKS = sorted((Path(__file__).resolve().parents[3] / "notebooks").glob("0*.ipynb"))
PIECES = list(dict.fromkeys(e.piece for e in CORE.values()))
CHECKER = re.compile(r"^\s*check\(\s*[\"'](\w+)[\"']", re.M)
#: Line magics a cell that names load_agent may hold: ``%time`` runs its statement, the others
#: set up the display. Any other magic fails the test: the rule above must say what it does.
TIMING, DISPLAY = "%time ", ("%matplotlib",)


def stored() -> dict[int, nbformat.NotebookNode]:
    """The core notebooks as stored, by number."""
    return {int(path.name[:2]): nbformat.read(path, as_version=4) for path in NOTEBOOKS}


def python_of(cell) -> str:
    """A cell's Python: ``%time`` dropped from its statement, display magics dropped."""
    lines = []
    for line in cell.source.splitlines():
        if line.startswith(TIMING):
            line = line[len(TIMING) :]
        elif line.startswith(DISPLAY):
            continue
        assert not line.lstrip().startswith(("%", "!")), f"a magic the rule does not know: {line}"
        lines.append(line)
    return "\n".join(lines)


def loads_agent(node: ast.AST) -> list[ast.Call]:
    """The ``load_agent(...)`` calls in ``node``."""
    return [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "load_agent"
    ]


def one_per_name(statement: ast.stmt) -> list[ast.stmt]:
    """``a, b = x, y`` as ``a = x`` and ``b = y``; any other statement as it is."""
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Tuple)
        and isinstance(statement.value, ast.Tuple)
        and len(statement.targets[0].elts) == len(statement.value.elts)
    ):
        pairs = zip(statement.targets[0].elts, statement.value.elts)
        return [ast.fix_missing_locations(ast.Assign([t], v)) for t, v in pairs]
    return [statement]


def file_piece(path: Path, name: str) -> str | None:
    """The source of the top-level function ``name`` in the learner's file, or None."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return "".join(lines[node.lineno - 1 : node.end_lineno])
    return None


class Learner:
    """One learner going through the stored notebooks in order, in one folder."""

    def __init__(self, path: Path):
        self.path = path
        self.typed: dict[str, str] = {}  # piece -> the source they last saved
        self.latest: dict[str, str] = {}  # piece -> the exercise it was last saved as
        self.loaded: list[tuple[int, str]] = []  # (notebook, piece) of every "yours" line

    def notebook(self, number: int, nb) -> None:
        """Run notebook ``number``'s cells by the rule; assert as the module says."""
        self.number, self.space, self.carried = number, {"__name__": "__main__"}, set()
        before = set(self.typed)  # the pieces saved in earlier notebooks
        here = len(self.loaded)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            exercise = cell.metadata.get("react_lab", {}).get("exercise")
            given = cell.source.strip().startswith("%agent run_loop +")
            if given:
                self.given_cell(cell.source)
                continue
            if exercise:
                self.exercise_cell(exercise, cell.source)
            elif CHECKER.search(cell.source):
                self.checker_cell(CHECKER.search(cell.source).group(1), cell.source)
            elif re.search(r"\bload_agent\b", cell.source):
                self.loading_cell(python_of(cell))
            self.pieces_are_the_learners()
            if exercise:
                continue
            tree = ast.parse(python_of(cell))
            named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            named |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
            needed = named & before
            needed |= {used for piece in needed for used in CORE[self.latest[piece]].uses} & before
            loaded = {piece for _, piece in self.loaded[here:]}
            assert needed <= loaded, (
                f"notebook {number:02d} names {sorted(needed - loaded)} of the learner's "
                "before it loads it from my_agent.py"
            )

    def pieces_are_the_learners(self) -> None:
        """Every piece the notebook's namespace holds: from my_agent.py, or typed in this one."""
        for name, value in self.space.items():
            if name not in PIECES or not callable(value):
                continue
            where = getattr(getattr(value, "__code__", None), "co_filename", "")
            mine = where == str(self.path) or where.startswith("<test-cell-")
            assert mine and not hasattr(value, "reference"), (
                f"notebook {self.number:02d}: its {name} is not the learner's ({value!r})"
            )

    def exercise_cell(self, exercise: str, source: str) -> None:
        """The learner's cell: the stub typed over, or the ``%agent`` edit typed over."""
        e = CORE[exercise]
        typed = reference_source(exercise)
        if not e.edits:
            assert source.rstrip("\n") == e.stub.rstrip("\n"), f"{exercise}: not stored unsolved"
            run_cell(typed, self.space)
            return
        line = source.strip()
        words = line.split()
        assert words[0] == "%agent" and words[1] == CORE[e.edits].piece, line
        started = agent_source(" ".join(words[1:]))  # what the magic writes into the cell
        first, rest = started.split("\n", 1)
        assert first.startswith(f"# {line}: your {words[1]} from my_agent.py;"), first
        saved = self.typed[words[1]]
        if len(words) == 4:  # %agent run_loop as run_native
            saved = re.sub(rf"\bdef {words[1]}\b", f"def {words[3]}", saved, count=1)
        assert rest == saved, f"{exercise}: the edit does not start from the learner's own piece"
        run_cell(first + "\n" + typed, self.space)  # they edit below the magic's comment line

    def given_cell(self, source: str) -> None:
        """The lesson's lines in the learner's saved loop, run as the magic wrote them."""
        line = source.strip()
        started = agent_source(" ".join(line.split()[1:]))
        first, rest = started.split("\n", 1)
        assert first.startswith(f"# {line}: your run_loop from my_agent.py, with"), first
        add, _ = GIVEN_LINES[line.split()[-1]]
        assert rest == add(self.typed["run_loop"])[0], "the lesson's lines are not in their loop"
        run_cell(started, self.space)
        self.given = rest

    def checker_cell(self, exercise: str, source: str) -> None:
        """The checker as stored: ✓, and the learner's piece saved into my_agent.py."""
        out = io.StringIO()
        with redirect_stdout(out):
            run_cell(source, self.space)
        said = out.getvalue()
        assert re.fullmatch(
            rf"✓ {exercise}: (\d+)/\1 cases pass — saved to my_agent\.py\n", said
        ), f"notebook {self.number:02d}: {said}"
        piece = CORE[exercise].piece
        typed = self.given if CORE[exercise].given else reference_source(exercise)
        assert file_piece(self.path, piece) == typed, (
            f"{piece} is not saved as the learner typed it"
        )
        self.typed[piece], self.latest[piece] = typed, exercise

    def loading_cell(self, python: str) -> None:
        """Imports, load_agent's calls, and what passes on their results; nothing else."""
        for statement in ast.parse(python).body:
            for part in one_per_name(statement):
                self.statement(part)

    def statement(self, node: ast.stmt) -> None:
        calls = loads_agent(node)
        target = isinstance(node, ast.Assign) and len(node.targets) == 1
        target = target and isinstance(node.targets[0], ast.Name)
        value = node.value.value if target and isinstance(node.value, ast.Attribute) else None
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.run(node)
        elif calls and target and (node.value in calls or value in calls):
            self.run(node)
            self.carried.add(node.targets[0].id)
        elif calls:
            for call in calls:
                self.run(ast.Expr(call))
        elif target and self.passes_on(node.value):
            self.run(node)
            self.carried.add(node.targets[0].id)

    def passes_on(self, value: ast.expr) -> bool:
        """True when ``value`` reads only names bound from load_agent's results."""
        read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        return bool(read) and read <= self.carried

    def run(self, node: ast.stmt) -> None:
        """Run one statement; a load_agent call's lines are asserted to be the learner's."""
        module = ast.fix_missing_locations(ast.Module([node], type_ignores=[]))
        code = compile(module, f"<notebook {self.number:02d}>", "exec")
        out = io.StringIO()
        with redirect_stdout(out):
            exec(code, self.space)
        if not loads_agent(node):
            assert out.getvalue() == "", out.getvalue()
            return
        lines = out.getvalue().splitlines()
        assert lines, f"notebook {self.number:02d}: {ast.unparse(node)} printed nothing"
        for line in lines:
            match = re.fullmatch(
                r"✓ ([\w, ]+): yours (?:\(my_agent\.py\)|as of notebook \d\d \(my_agent\.versions/"
                r"[\w.-]+\))",
                line,
            )
            assert match, f"notebook {self.number:02d}: {ast.unparse(node)} said {line!r}"
            self.loaded += [(self.number, piece) for piece in match.group(1).split(", ")]


def test_the_learners_code_flows_through_the_eight_stored_notebooks(agent_file):
    notebooks = stored()
    assert sorted(notebooks) == list(range(1, 9))
    learner = Learner(agent_file)
    for number, nb in notebooks.items():
        learner.notebook(number, nb)

    # every piece written is saved, in its last version, and loaded later as the learner's
    last = {e.piece: name for name, e in CORE.items()}
    assert learner.latest == last
    for piece, exercise in last.items():
        assert file_piece(agent_file, piece) == learner.typed[piece]
        assert CORE[exercise].given or learner.typed[piece] == reference_source(exercise)
        written = CORE[exercise].notebook
        assert any(n >= written and p == piece for n, p in learner.loaded), piece


def test_a_broken_saved_piece_stops_the_chain(agent_file):
    """The learner's observe, saved in 01, broken in the file: notebook 02 says so, and fails."""
    notebooks = stored()
    learner = Learner(agent_file)
    learner.notebook(1, notebooks[1])
    text = agent_file.read_text()
    assert "ACTION_RE.search(text)" in text
    agent_file.write_text(
        text.replace("ACTION_RE.search(text)", 're.search(r"Action: (\\w+)\\[(.*)\\]", text)', 1)
    )
    with pytest.raises(
        AssertionError, match=r"said '→ observe: the reference stands in \(yours fails rule 1"
    ):
        learner.notebook(2, notebooks[2])


@pytest.mark.parametrize(
    "number, loading, instead, why",
    [
        (  # the reference imported where the learner's was loaded
            4,
            'observe = load_agent(["observe"]).observe',
            "from react_lab.agent import observe",
            r"notebook 04: its observe is not the learner's",
        ),
        (  # a narrower load: its live runs use agent.run_loop, which it no longer loads
            5,
            "load_agent(5)",
            'load_agent(["observe"])',
            r"notebook 05 names \['run_loop'\] of the learner's before it loads it",
        ),
    ],
    ids=["04 imports the reference", "05 loads observe alone"],
)
def test_a_notebook_that_stops_loading_an_earlier_piece_stops_the_chain(
    agent_file, number, loading, instead, why
):
    notebooks = stored()
    cell = next(c for c in notebooks[number].cells if loading in c.source)
    cell.source = cell.source.replace(loading, instead)
    learner = Learner(agent_file)
    for earlier in range(1, number):
        learner.notebook(earlier, notebooks[earlier])
    with pytest.raises(AssertionError, match=why):
        learner.notebook(number, notebooks[number])
