"""The learner's agent as a file they own: ``my_agent.py``, saved piece by piece, loaded fresh.

Each piece a learner writes in the core path (``observe``, ``run_loop``, ...) is saved into
one file beside the notebooks when its checker passes (:func:`save`; the checker calls it).
A notebook starts from that file::

    agent = load_agent(4)      # the pieces written before notebook 04, each checked
    # ✓ observe: yours (my_agent.py)
    # → run_loop: the reference stands in (yours fails rule 6 "stop as a parameter")
    # ✓ is_forged: yours (my_agent.py)
    agent.run_loop(question, model, tools)

:func:`load_agent` reads the file afresh on every call (no stale module, no
``importlib.reload``), checks each piece on the scripted model, and puts the reference
solution in for a piece that is missing or fails, saying so in one line. The pieces live
in one namespace and call each other by name, so a learner's ``run_loop`` calls *their*
``observe`` when it passed, and the reference's when it did not.

An edit exercise starts from the learner's own code: ``%agent run_loop`` replaces the
cell with the current ``run_loop`` of ``my_agent.py`` (or the reference's, saying so), as
IPython's ``%load -s`` does. :func:`download_link` offers the file for download: Binder
keeps nothing between sessions.

The file is ``my_agent.py`` in the kernel's working directory (the notebooks' folder);
``REACT_LAB_AGENT_FILE`` names another path (the tests use it).

Nothing a learner wrote is lost: every save is also kept as a version, one file a save in
``my_agent.versions/`` beside the file (``004-run_loop-run_loop_stop.py``: the counter, the
piece, the exercise whose checker saved it). :func:`agent_versions` lists them and
:func:`restore_version` puts one back. A checker of an earlier exercise that passes while the
file holds a newer version of the piece (one that passes a later exercise: 02's ``run_loop``
after 06's guarded one) keeps the newer one, and says how to take the earlier one instead.
"""

from __future__ import annotations

import ast
import builtins
import dis
import importlib.util
import inspect
import io
import os
import re
import sys
import tempfile
import textwrap
import types
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from .. import agent
from .core_exercises import CORE, Exercise, pieces_before
from .exercises import NOT_WRITTEN, failed_rule, run_cases, solutions_mode
from .exercises import check as check_piece

AGENT_FILE_ENV = "REACT_LAB_AGENT_FILE"
FILE_NAME = "my_agent.py"

#: The top of a new ``my_agent.py``: what it is, and the imports the pieces use.
HEADER = '''"""My ReAct agent: the pieces I wrote in the react_lab notebooks.

Each piece is saved here when its checker passes, and replaced when it passes again.
The notebooks load this file with react_lab.workshop.load_agent, which checks every
piece and says which ones are mine. It also imports on its own: import my_agent.
"""
import json
import re

import jsonschema

from react_lab.messages import first_messages, reply_calls, tool_messages
from react_lab.protocol import ACTION_RE, ANSWER_RE, STOP, build_prompt
from react_lab.provenance import why_unsourced
from react_lab.tools import call_tool, tool_schemas
'''

#: Where :func:`save` looks for a name a piece uses that the file does not import yet.
IMPORTABLE_FROM = (
    "react_lab.protocol",
    "react_lab.tools",
    "react_lab.messages",
    "react_lab.cost",
    "react_lab.schema",
)

#: For each piece, the exercise the last :func:`load_agent` checked it as, and why the
#: reference stood in ("" when theirs passed): what ``%agent`` shows and says.
_LAST: dict[str, str] = {}
_LAST_REASON: dict[str, str] = {}


def agent_path() -> Path:
    """The learner's file: ``$REACT_LAB_AGENT_FILE``, else ``my_agent.py`` in the working folder."""
    return Path(os.environ.get(AGENT_FILE_ENV) or FILE_NAME).absolute()


# --------------------------------------------------------------------------- save


def save(fn: Callable, name: str | None = None) -> Path | None:
    """Write ``fn``'s source into ``my_agent.py`` as ``name`` (default: its own); print one line.

    An earlier piece of that name is replaced where it stands (and kept as a version,
    :func:`agent_versions`); a new one is appended. Imports the piece needs and the file
    lacks are added below the file's imports. Returns the file's path, or None when nothing
    could be saved (a lambda, a file that no longer parses), with the reason printed; never
    raises for those.
    """
    path, message = _save(fn, name or getattr(fn, "__name__", ""))
    print(message)
    return path


def save_quietly(fn: Callable, exercise: str) -> str:
    """Save ``fn`` as exercise ``exercise``'s piece; return what happened; never raise.

    What happened is "saved to my_agent.py", or, when the file holds a newer version of the
    piece (one that passes a later exercise than ``exercise``, and ``fn`` does not), that the
    newer one stays and which version to restore to take ``fn`` instead.
    """
    try:
        newer = _newer_in_file(CORE[exercise], fn)
        return _save(fn, CORE[exercise].piece, exercise, keep=newer)[1]
    except Exception as exc:  # noqa: BLE001 -- a checker's ✓ line must not end in a traceback
        return f"not saved: {type(exc).__name__}: {exc}"


def _save(
    fn: Callable, name: str, exercise: str = "save", keep: Exercise | None = None
) -> tuple[Path | None, str]:
    """Save ``fn`` as ``name`` and keep the file it makes as a version; with ``keep`` (the later
    exercise the file's piece passes), only the version: the file keeps its newer piece."""
    path = agent_path()
    source, problem = piece_source(fn, name)
    if problem:
        return None, f"not saved: {problem}"
    text = path.read_text(encoding="utf-8") if path.exists() else HEADER
    try:
        text = _with_piece(text, name, source)
        text, missing = _with_imports(text, fn, name)
        text, missing, helpers = _with_helpers(text, fn, missing)
    except SyntaxError as exc:
        return None, (
            f"not saved: {path.name} does not parse (line {exc.lineno}: {exc.msg}); "
            "fix it there, or delete it to start it again"
        )
    version = _keep_version(text, name, exercise)
    if keep is not None:
        return path, (
            f"kept your newer {name} in {path.name} (it passes {keep.name}, notebook "
            f"{keep.notebook:02d}); this one is version {version.number}: "
            f"restore_version({version.number}) puts it there instead"
        )
    _write(path, text)
    also = f", with {', '.join(helpers)} (yours, which it calls)" if helpers else ""
    note = (
        (
            f"; it uses {', '.join(missing)}, which {path.name} does not define: define "
            f"{'it' if len(missing) == 1 else 'them'} inside {name}, or add "
            f"{'it' if len(missing) == 1 else 'them'} to {path.name} yourself"
        )
        if missing
        else ""
    )
    return path, f"saved to {path.name}{also}{note}"


def _newer_in_file(exercise: Exercise, fn: Callable) -> Exercise | None:
    """The latest exercise after ``exercise`` that the file's version of its piece passes and
    ``fn`` does not; None when there is none (the file's piece is not newer than ``fn``)."""
    later = [e for e in CORE.values() if e.piece == exercise.piece and _after(e, exercise)]
    path = agent_path()
    if not later or not path.exists():
        return None
    module, problem = _fresh_module(path)
    current = None if problem else _own(module, exercise.piece, path)
    if current is None or piece_source(current, exercise.piece) == piece_source(fn, exercise.piece):
        return None
    for candidate in reversed(later):
        if _passes(candidate, current):
            return None if _passes(candidate, fn) else candidate
    return None


def _after(exercise: Exercise, other: Exercise) -> bool:
    """True when ``exercise`` comes after ``other`` in the core path."""
    return list(CORE).index(exercise.name) > list(CORE).index(other.name)


def _passes(exercise: Exercise, fn: Callable) -> bool:
    """True when ``fn`` passes every case of ``exercise`` (what it prints is not shown)."""
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        return run_cases(exercise.name, fn)[2] is None


#: The most helper functions saved with one piece.
MAX_HELPERS = 8


def _with_helpers(
    text: str, fn: types.FunctionType, missing: list[str]
) -> tuple[str, list[str], list[str]]:
    """``text`` with the functions of the learner's that ``fn`` calls and it lacks (a helper
    written in the exercise cell, and the helpers those call); the names still missing; the
    helpers saved. A helper is a function written with ``def`` in the notebook."""
    saved: list[str] = []
    todo = list(missing)
    still: list[str] = []
    while todo:
        used = todo.pop(0)
        helper = fn.__globals__.get(used)
        source = None
        if (
            isinstance(helper, types.FunctionType)
            and helper.__module__ == "__main__"
            and len(saved) < MAX_HELPERS
        ):
            source, problem = piece_source(helper, used)
            source = None if problem else source
        if source is None:
            still.append(used)
            continue
        text = _with_piece(text, used, source)
        text, more = _with_imports(text, helper, used)
        saved.append(used)
        todo += [m for m in more if m not in saved and m not in todo and m not in still]
    return text, still, saved


def piece_source(fn: Callable, name: str) -> tuple[str, str | None]:
    """``fn``'s source as a top-level ``def name(...)``, and None; or ``""`` and why not.

    ``inspect.getsource`` works for a function defined in a notebook cell (IPython keeps
    each cell's text), not for a lambda or a function built at run time.
    """
    if not isinstance(fn, types.FunctionType):
        return "", f"{fn!r:.40} is not a function written with def"
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return "", f"the source of {fn.__name__} cannot be found (define it with def in a cell)"
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "", f"the source of {fn.__name__} cannot be read on its own"
    defs = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(tree.body) != 1 or not defs or defs[0].name != fn.__name__:
        return "", f"{fn.__name__} is not a function written with def (a lambda cannot be saved)"
    if fn.__name__ != name:
        lines = source.splitlines(keepends=True)
        at = defs[0].lineno - 1
        own = rf"\bdef\s+{re.escape(fn.__name__)}\b"
        lines[at] = re.sub(own, f"def {name}", lines[at], count=1)
        source = "".join(lines)
    return source.rstrip("\n") + "\n", None


def _top_defs(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Each top-level function's ``name -> (first line, last line)``, with decorators (1-based)."""
    spans = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            spans[node.name] = (first, node.end_lineno)
    return spans


def _with_piece(text: str, name: str, source: str) -> str:
    """``text`` with the function ``name`` replaced by ``source`` where it stands, or appended."""
    spans = _top_defs(ast.parse(text))
    lines = text.splitlines(keepends=True)
    if name in spans:
        first, last = spans[name]
        return "".join(lines[: first - 1]) + source + "".join(lines[last:])
    return text.rstrip("\n") + "\n\n\n" + source


def _global_names(code: types.CodeType) -> list[str]:
    """The global names ``code`` (and the code nested in it) reads, in order of first use."""
    names: list[str] = []
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") and instruction.argval not in names:
            names.append(instruction.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += [n for n in _global_names(const) if n not in names]
    return names


def _bound_names(tree: ast.Module) -> set[str]:
    """The names a module's top level binds: imports, functions, classes, assignments."""
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bound


def _import_line(name: str, value) -> str | None:
    """An import statement that binds ``name`` to ``value``, or None when none is known."""
    if isinstance(value, types.ModuleType):
        return f"import {value.__name__}" + (f" as {name}" if value.__name__ != name else "")
    module, own = getattr(value, "__module__", None), getattr(value, "__name__", None)
    if (
        isinstance(module, str)
        and isinstance(own, str)
        and module != "__main__"
        and getattr(sys.modules.get(module), own, None) is value
    ):
        return f"from {module} import {own}" + (f" as {name}" if own != name else "")
    for module in IMPORTABLE_FROM:
        if getattr(sys.modules.get(module), name, None) is value:
            return f"from {module} import {name}"
    return None


def _with_imports(text: str, fn: types.FunctionType, name: str) -> tuple[str, list[str]]:
    """``text`` with the imports ``fn`` needs and it lacks; and the names no import can give.

    The pieces are not imports: a name of another piece is the file's own.
    """
    tree = ast.parse(text)
    bound = _bound_names(tree) | set(dir(builtins)) | {e.piece for e in CORE.values()} | {name}
    wanted, missing = [], []
    for used in _global_names(fn.__code__):
        if used in bound or used not in fn.__globals__:
            continue
        line = _import_line(used, fn.__globals__[used])
        (wanted if line else missing).append(line or used)
    if not wanted:
        return text, missing
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    lines = text.splitlines(keepends=True)
    at = imports[-1].end_lineno if imports else 0
    added = "".join(f"{line}\n" for line in wanted)
    return "".join(lines[:at]) + added + "".join(lines[at:]), missing


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` in one step (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=".my_agent.", suffix=".py", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- versions

#: A version's file name: ``004-run_loop-run_loop_stop.py`` (counter, piece, exercise).
VERSION_NAME = re.compile(r"^(\d+)-([A-Za-z_]\w*)-([A-Za-z_]\w*)\.py$")


@dataclass(frozen=True)
class Version:
    """One save of a piece: the whole ``my_agent.py`` it made, kept in ``my_agent.versions/``.

    ``exercise`` names the checker that saved it (``"save"`` for :func:`save`, ``"edited"``
    for a piece edited in the file by hand, kept before a restore replaced it).
    """

    number: int
    piece: str
    exercise: str
    path: Path

    def __str__(self) -> str:
        return f"version {self.number}: {self.piece}, saved by {self.exercise}"


class Versions(list):
    """The versions :func:`agent_versions` lists, shown one a line in a notebook."""

    def __repr__(self) -> str:
        if not self:
            return f"no versions yet: {versions_folder().name} fills as checkers pass"
        lines = [str(v) for v in self]
        return "\n".join(lines + ["restore_version(N) puts version N back in my_agent.py"])


def versions_folder() -> Path:
    """Where the versions are kept: ``my_agent.versions/`` beside the learner's file."""
    path = agent_path()
    return path.with_name(f"{path.stem}.versions")


def agent_versions(piece: str | None = None) -> Versions:
    """Every kept version of the learner's pieces (of ``piece`` alone, if given), oldest first."""
    folder = versions_folder()
    found = []
    for file in folder.iterdir() if folder.is_dir() else ():
        match = VERSION_NAME.match(file.name)
        if match and piece in (None, match.group(2)):
            found.append(Version(int(match.group(1)), match.group(2), match.group(3), file))
    return Versions(sorted(found, key=lambda v: v.number))


def _keep_version(text: str, piece: str, exercise: str) -> Version:
    """Keep ``text`` (the file as a save of ``piece`` makes it) as the next version."""
    number = max((v.number for v in agent_versions()), default=0) + 1
    path = versions_folder() / f"{number:03d}-{piece}-{exercise}.py"
    _write(path, text)
    return Version(number, piece, exercise, path)


def restore_version(number: int) -> Path | None:
    """Put version ``number``'s piece back into ``my_agent.py``; print one line; return the path.

    The piece it replaces is kept as a version first, unless one already holds it, and the
    line says which: nothing is overwritten without a way back. Prints why, and returns
    None, for a number no version has or a file that does not parse.
    """
    version = next((v for v in agent_versions() if v.number == number), None)
    if version is None:
        kept = ", ".join(str(v.number) for v in agent_versions()) or "none yet"
        print(f"no version {number}; the versions kept: {kept} (agent_versions() lists them)")
        return None
    path, piece = agent_path(), version.piece
    source, why = _file_source(version.path, piece)
    if source is None:
        print(f"version {number} cannot be restored: {why}")
        return None
    text = path.read_text(encoding="utf-8") if path.exists() else HEADER
    current, _ = _file_source(path, piece)
    try:
        restored = _with_piece(text, piece, source)
        restored = _with_import_lines(restored, version.path.read_text(encoding="utf-8"))
    except SyntaxError as exc:
        print(f"not restored: {path.name} does not parse (line {exc.lineno}: {exc.msg})")
        return None
    before = ""
    if current is not None and current != source:
        holding = [
            v for v in agent_versions(piece) if _file_source(v.path, piece)[0] == current
        ] or [_keep_version(text, piece, "edited")]
        before = f"; the {piece} it replaces is version {holding[-1].number}"
    _write(path, restored)
    print(f"restored {version} into {path.name}{before}")
    return path


def _with_import_lines(text: str, other: str) -> str:
    """``text`` with the top-level imports of ``other`` that it lacks, below its own imports."""
    tree = ast.parse(text)
    have = {ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    wanted = [
        ast.unparse(n)
        for n in ast.parse(other).body
        if isinstance(n, (ast.Import, ast.ImportFrom)) and ast.unparse(n) not in have
    ]
    if not wanted:
        return text
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    lines = text.splitlines(keepends=True)
    at = imports[-1].end_lineno if imports else 0
    return "".join(lines[:at]) + "".join(f"{line}\n" for line in wanted) + "".join(lines[at:])


# --------------------------------------------------------------------------- load


def exercises_for(pieces: int | str | Iterable[str]) -> list[Exercise]:
    """The exercises to check: a notebook number (the agent before it) or exercise names.

    Returns one exercise per piece (the latest named), with the pieces those call, ordered
    so a piece is checked after the pieces it calls. Raises ``ValueError`` for an unknown name.
    """
    names = (
        pieces_before(pieces)
        if isinstance(pieces, int)
        else [pieces]
        if isinstance(pieces, str)
        else list(pieces)
    )
    unknown = [n for n in names if n not in CORE]
    if unknown:
        raise ValueError(f"unknown exercise {unknown[0]!r}; the core path's are: {', '.join(CORE)}")
    order = list(CORE)
    latest = {}
    for name in sorted(names, key=order.index):
        latest[CORE[name].piece] = CORE[name]
    wanted = [piece for e in list(latest.values()) for piece in _called(e)]
    for piece in wanted:  # a piece the asked-for ones call: its first version, unless asked for
        latest.setdefault(piece, next(e for e in CORE.values() if e.piece == piece))
    return sorted(latest.values(), key=lambda e: (_depth(e), order.index(e.name)))


def _called(exercise: Exercise) -> list[str]:
    """The pieces ``exercise``'s piece calls, and (in their first version) the pieces those call."""
    called = []
    for piece in exercise.uses:
        first = next(e for e in CORE.values() if e.piece == piece)
        called += [piece] + _called(first)
    return called


def _depth(exercise: Exercise) -> int:
    """How many pieces deep the calls of ``exercise``'s piece go (0: it calls none)."""
    called = [e for e in CORE.values() if e.piece in exercise.uses]
    return 1 + max(map(_depth, called)) if called else 0


def reference(exercise: str) -> types.FunctionType:
    """The reference solution of ``exercise`` (from :mod:`react_lab.agent`)."""
    return getattr(agent, exercise)


def _reference_names() -> dict:
    """The names the reference pieces use that are not pieces: their imports (json, ACTION_RE)."""
    pieces = {e.name for e in CORE.values()} | {e.piece for e in CORE.values()}
    used = {n for e in CORE.values() for n in _global_names(reference(e.name).__code__)}
    space = vars(agent)
    return {n: space[n] for n in sorted(used - pieces) if n in space}


def _rebind(fn: types.FunctionType, space: dict, name: str) -> types.FunctionType:
    """A copy of ``fn`` named ``name`` that finds its globals in ``space`` (the learner's agent)."""
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    copy = types.FunctionType(code, space, name, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__, copy.__doc__ = fn.__kwdefaults__, fn.__doc__
    copy.__qualname__, copy.__module__ = name, space.get("__name__", "my_agent")
    copy.__annotations__ = dict(fn.__annotations__)
    copy.reference = fn.__name__  # which exercise's reference stands in
    return copy


def _fresh_module(path: Path) -> tuple[types.ModuleType, str | None]:
    """A new module run from the file at ``path``, and None; or an empty one and why it did not run.

    The module starts with the names the reference pieces import, so a reference put in
    later finds them. The file is compiled from its text each time (no ``.pyc``: two saves
    within a second must not load the older one).
    """
    spec = importlib.util.spec_from_file_location("my_agent", path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(_reference_names())
    if not path.exists():
        return module, f"{path.name} not found"
    try:
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    except SyntaxError as exc:
        why = f"{path.name} does not run: SyntaxError at line {exc.lineno}: {exc.msg}"
    except Exception as exc:  # noqa: BLE001 -- the learner's file: report, never raise
        line = next((f.lineno for f in reversed(_frames(exc)) if f.filename == str(path)), "?")
        why = f"{path.name} does not run: {type(exc).__name__} at line {line}: {exc}"
    else:
        return module, None
    fresh = importlib.util.module_from_spec(spec)
    fresh.__dict__.update(_reference_names())
    return fresh, why


def _frames(exc: BaseException) -> list:
    import traceback

    return traceback.extract_tb(exc.__traceback__)


def _own(module: types.ModuleType, piece: str, path: Path) -> types.FunctionType | None:
    """The learner's function ``piece`` as the file defines it, or None."""
    fn = module.__dict__.get(piece)
    ok = isinstance(fn, types.FunctionType) and fn.__code__.co_filename == str(path)
    return fn if ok else None


def _verdict(exercise: Exercise, fn: types.FunctionType) -> tuple[bool, str]:
    """Check ``fn`` as ``exercise`` or a later version of its piece: (passed, why not / which)."""
    later = [e for e in CORE.values() if e.piece == exercise.piece and _after(e, exercise)]
    first_failure = None
    for candidate in [exercise] + later:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):  # the learner's prints
            failure = run_cases(candidate.name, fn)[2]
        if failure is None:
            newer = "" if candidate is exercise else f", as of notebook {candidate.notebook:02d}"
            return True, newer
        first_failure = first_failure or failure
    if first_failure == NOT_WRITTEN:
        return False, "yours: not written yet"
    rule = failed_rule(first_failure)
    return False, f'yours fails rule {rule[0]} "{rule[1]}"' if rule else "yours fails its checker"


def _kept_as_of(exercise: Exercise, mine: types.FunctionType, path: Path):
    """``(fn, "my_agent.versions/NAME")``: the learner's piece as ``exercise``'s checker saved
    it, when the file holds one a later exercise saved (a notebook re-run after a later one);
    else None. The kept version must still pass ``exercise``'s checker."""
    current = _file_source(path, exercise.piece)[0]
    versions = agent_versions(exercise.piece)
    saver = next(
        (
            v.exercise
            for v in reversed(versions)
            if _file_source(v.path, exercise.piece)[0] == current
        ),
        None,
    )
    if saver not in CORE or not _after(CORE[saver], exercise):
        return None
    for version in reversed(versions):
        if version.exercise != exercise.name:
            continue
        module, problem = _fresh_module(version.path)
        fn = None if problem else module.__dict__.get(exercise.piece)
        if isinstance(fn, types.FunctionType) and _passes(exercise, fn):
            return fn, f"{version.path.parent.name}/{version.path.name}"
    return None


def load_agent(pieces: int | str | Iterable[str]) -> types.ModuleType:
    """Load the agent from ``my_agent.py``: each piece theirs if it passes, or the reference.

    ``pieces`` is a notebook number (the pieces written before it: ``load_agent(4)``) or
    exercise names (``["observe", "run_loop"]``; an edit exercise's name asks for that
    version of its piece, ``"run_loop_stop"``). The file is read afresh; each piece is
    checked by its exercise's checker on the scripted model. Prints a line per piece, pieces
    that are so for the same reason on one line::

        ✓ run_loop: yours (my_agent.py)
        → observe: the reference stands in (yours fails rule 3 "run the tool")
        → is_forged, prompt_tokens_at_step: the reference stands in (yours: not written yet)

    A notebook run again after a later one gets the learner's piece as that notebook had it:
    when the file's piece was saved by a later exercise, the version the asked-for exercise's
    checker kept (``my_agent.versions/``) is loaded instead, and the line says so::

        ✓ run_loop: yours as of notebook 03 (my_agent.versions/004-run_loop-run_loop_stop.py)

    Returns a module whose attributes are the pieces; they call each other through it.
    In solutions mode (CI) every piece is the reference, checked (``AssertionError`` if one
    fails) and so marked. Raises ``ValueError`` for an unknown exercise name; never for
    anything in the learner's file.
    """
    chosen = exercises_for(pieces)
    asked = set(  # the versions asked for; a piece they call is the file's newest
        pieces_before(pieces)
        if isinstance(pieces, int)
        else [pieces]
        if isinstance(pieces, str)
        else pieces
    )
    path = agent_path()
    module, problem = _fresh_module(path)
    if solutions_mode():
        problem = "solutions mode"
    said = {}
    for exercise in chosen:  # a piece after the pieces it calls
        piece = exercise.piece
        mine = None if problem else _own(module, piece, path)
        asked_for = exercise.name in asked
        kept = None if mine is None or not asked_for else _kept_as_of(exercise, mine, path)
        if kept is not None:  # the file holds a later version: theirs as of this exercise
            fn, version = kept
            module.__dict__[piece] = _rebind(fn, module.__dict__, piece)
            said[piece] = ("✓", f"yours as of notebook {exercise.notebook:02d} ({version})")
            _LAST[piece], _LAST_REASON[piece] = exercise.name, ""
            continue
        if mine is not None:
            passed, why = _verdict(exercise, mine)
            if passed:
                said[piece] = ("✓", f"yours ({path.name}{why})")
                _LAST[piece], _LAST_REASON[piece] = exercise.name, ""
                continue
        else:
            why = problem or "yours: not written yet"
        module.__dict__[piece] = _rebind(reference(exercise.name), module.__dict__, piece)
        if solutions_mode():
            failure = run_cases(exercise.name, module.__dict__[piece])[2]
            if failure is not None:
                raise AssertionError(f"reference solution for {exercise.name} fails: {failure}")
        said[piece] = ("→", f"the reference stands in ({why})")
        _LAST[piece], _LAST_REASON[piece] = exercise.name, why
    first_seen = list(dict.fromkeys(e.piece for e in CORE.values()))
    lines: dict[tuple, list[str]] = {}  # pieces that are so for the same reason share a line
    for piece in sorted(said, key=first_seen.index):  # in the order the notebooks teach them
        lines.setdefault(said[piece], []).append(piece)
    for (mark, what), named in lines.items():
        print(f"{mark} {', '.join(named)}: {what}")
    return module


# --------------------------------------------------------------------------- %agent


def _file_source(path: Path, name: str) -> tuple[str | None, str]:
    """The source of the top-level function ``name`` in the file at ``path``; or None and why."""
    if not path.exists():
        return None, f"{path.name} not found"
    text = path.read_text(encoding="utf-8")
    try:
        spans = _top_defs(ast.parse(text))
    except SyntaxError as exc:
        return None, f"{path.name} does not parse (line {exc.lineno}: {exc.msg})"
    if name not in spans:
        return None, f"yours is not in {path.name} yet"
    first, last = spans[name]
    return "".join(text.splitlines(keepends=True)[first - 1 : last]).rstrip("\n") + "\n", ""


def reference_source(exercise: str) -> str:
    """The reference piece of ``exercise`` as the learner's file holds it: named as the piece."""
    source, _ = piece_source(reference(exercise), CORE[exercise].piece)
    return source


def agent_source(line: str) -> str:
    """The cell ``%agent NAME`` (or ``%agent NAME as NEW``) writes: the piece's current source.

    Theirs from ``my_agent.py`` when it is there, else the reference of the version the
    last :func:`load_agent` chose (or the piece's first), with a first comment line that
    says which. ``%agent run_loop + guards`` and ``%agent run_loop + provenance_guard`` add
    the lines the lesson writes (:data:`GIVEN_LINES`). Raises ``ValueError`` for a line that
    names no piece.
    """
    words = line.split()
    pieces = list(dict.fromkeys(e.piece for e in CORE.values()))
    if words[0:2] == ["run_loop", "+"] and len(words) == 3 and words[2] in GIVEN_LINES:
        return _given_cell(line, words[2])
    if not (len(words) == 1 or len(words) == 3 and words[1] == "as") or words[0] not in pieces:
        raise ValueError(
            "usage: %agent NAME, %agent NAME as NEW_NAME, or %agent run_loop + "
            f"{' or + '.join(GIVEN_LINES)}; NAME is one of " + ", ".join(pieces)
        )
    name, new = words[0], words[2] if len(words) == 3 else None
    if new is not None and not new.isidentifier():
        raise ValueError(f"{new!r} is not a Python name")
    path = agent_path()
    source, why = _file_source(path, name)
    if source is not None:
        failed = _LAST_REASON.get(name, "")
        said = f"your {name} from {path.name}" + (
            f" ({failed}; the reference stood in)" if failed.startswith("yours fails") else ""
        )
    else:
        exercise = _LAST.get(name) or next(e.name for e in CORE.values() if e.piece == name)
        source = reference_source(exercise)
        said = f"the reference {name} stands in ({why})"
    if new:
        own = rf"^(\s*def\s+){re.escape(name)}\b"
        source = re.sub(own, rf"\g<1>{new}", source, count=1, flags=re.MULTILINE)
    return f"# %agent {line.strip()}: {said}; edit it, then run this cell\n{source}"


# ------------------------------------------------------------------- lines the lesson writes


def _loop_parts(source: str):
    """A run_loop's parts the lesson's lines attach to, or why it has none.

    ``(node, read, last)``: the function, the line in its ``for`` loop that reads the
    completion (``text = model.complete(transcript, ...).text``) and its last statement, a
    ``return`` of two values.
    """
    try:
        node = ast.parse(source).body[0]
    except (SyntaxError, IndexError):
        return None, "it does not parse"
    loop = next((n for n in node.body if isinstance(n, ast.For)), None)
    read = loop and next(
        (
            n
            for n in loop.body
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Attribute)
            and n.value.attr == "text"
            and isinstance(n.value.value, ast.Call)
            and getattr(n.value.value.func, "attr", "") == "complete"
            and n.value.value.args
            and isinstance(n.value.value.args[0], ast.Name)
        ),
        None,
    )
    last = node.body[-1]
    if read is None:
        return None, "no line in its for loop reads `text = model.complete(transcript, ...).text`"
    if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Tuple)):
        return None, "its last line is not `return answer, transcript`"
    return (node, loop, read, last), None


def with_guards(source: str) -> tuple[str, str | None]:
    """``source``, a 03 ``run_loop``, with 06's two guards; or ``source`` and why not.

    ``calls = []`` before the ``for`` loop; the line that appends ``observe(...)`` becomes a
    refusal for a call that already ran, or that line and the call kept; the last ``return``
    becomes one more model call, with the loop's ``stop``, and ``"[best effort] "`` plus its
    first line. Each added line ends ``# + guards``.
    """
    if "[best effort]" in source:
        return source, None  # already there
    parts, problem = _loop_parts(source)
    if problem:
        return source, problem
    node, loop, read, last = parts
    body = [n for n in loop.body if not isinstance(n, ast.If)]
    observed = next(
        (
            n
            for n in body
            if isinstance(n, ast.AugAssign)
            and isinstance(n.value, ast.Call)
            and getattr(n.value.func, "id", "") == "observe"
        ),
        None,
    )
    if observed is None:
        return source, "no line in its for loop appends `observe(text, tools)`"
    text, transcript = read.targets[0].id, read.value.value.args[0].id
    stop = next((k for k in read.value.value.keywords if k.arg == "stop"), None)
    stop = ast.get_source_segment(source, stop.value) if stop else "STOP"
    lines, mark = source.splitlines(), "  # + guards"
    inner, outer = " " * observed.col_offset, " " * last.col_offset
    refusal = '"\\nObservation: Error: that call already ran; see above.\\nThought:"'
    kept = lines[observed.lineno - 1 : observed.end_lineno]
    lines[last.lineno - 1 : last.end_lineno] = [
        f'{outer}final = model.complete({transcript} + " I must answer now.\\nAnswer:", '
        f"stop={stop}, max_tokens=128)" + mark,
        f'{outer}return "[best effort] " + final.text.strip().split("\\n")[0], {transcript}' + mark,
    ]
    lines[observed.lineno - 1 : observed.end_lineno] = [
        f"{inner}if (call := ACTION_RE.search({text})) and call.groups() in calls:" + mark,
        f"{inner}    {transcript} += {refusal}" + mark,
        f"{inner}else:" + mark,
        *["    " + line for line in kept],
        f"{inner}    calls.append(call and call.groups())" + mark,
    ]
    lines[loop.lineno - 1 : loop.lineno - 1] = [" " * loop.col_offset + "calls = []" + mark]
    return "\n".join(lines) + "\n", None


def with_provenance(source: str) -> tuple[str, str | None]:
    """``source``, a 06 ``run_loop``, with the lines that ask ``provenance_guard`` first; or
    ``source`` and why they could not be put in.

    Three lines after the one that reads the completion (``text = model.complete(...).text``):
    a completion the guard refuses gets its reason as the observation and the loop goes on;
    and the last ``return`` (the best effort) asks the guard too, returning None when it
    refuses. Each added line ends ``# + provenance``; the loop's own lines are kept as they
    are, comments too. The names are the loop's own (its transcript, its text).
    """
    if "provenance_guard(" in source:
        return source, None  # already there
    if "[best effort]" not in source:  # the lines go around 06's guards: those first
        return source, (
            "your run_loop has no best effort yet: put the lesson's two guards in first "
            "(%agent run_loop + guards), then this"
        )
    parts, problem = _loop_parts(source)
    if problem:
        return source, problem
    node, _, read, last = parts
    question, tools = node.args.args[0].arg, node.args.args[2].arg
    text, transcript = read.targets[0].id, read.value.value.args[0].id
    lines, mark = source.splitlines(), "  # + provenance"
    best, kept = (ast.get_source_segment(source, e) for e in last.value.elts)
    inner, outer = " " * read.col_offset, " " * last.col_offset
    refused = 'f"\\nObservation: Error: {refused}\\nThought:"'
    ask = [
        f"{inner}if refused := provenance_guard({question}, {transcript}, {text}, {tools}):",
        f"{inner}    {transcript} += {text} + {refused}",
        f"{inner}    continue",
    ]
    end = [
        f"{outer}best = {best}",
        f'{outer}if provenance_guard({question}, {transcript}, f"Answer: {{best}}", {tools}):',
        f"{outer}    return None, {kept}",
        f"{outer}return best, {kept}",
    ]
    lines[last.lineno - 1 : last.end_lineno] = [line + mark for line in end]
    lines[read.end_lineno : read.end_lineno] = [line + mark for line in ask]
    return "\n".join(lines) + "\n", None


#: ``%agent run_loop + WORD``: the lines the lesson writes into the learner's loop, and the
#: exercise whose loop they start from.
GIVEN_LINES = {
    "guards": (with_guards, "run_loop_stop"),
    "provenance_guard": (with_provenance, "run_loop_guards"),
}


def _given_cell(line: str, word: str) -> str:
    """The cell ``%agent run_loop + WORD`` writes: their loop with the lesson's lines."""
    add, before = GIVEN_LINES[word]
    path = agent_path()
    source, why = _file_source(path, "run_loop")
    said = f"your run_loop from {path.name}"
    if source is None:
        source, said = reference_source(before), f"the reference run_loop ({why})"
    added, problem = add(source)
    if problem:
        note = (
            f"the lesson could not add its lines to {said}: {problem}; add them as the "
            "notebook says, then run this cell"
        )
    else:
        note = f"{said}, with the lesson's lines (marked # + {word.split('_')[0]}); run this cell"
    return f"# %agent {line.strip()}: {note}\n{added}"


def agent_magic(line: str) -> None:
    """The ``%agent`` line magic: the cell becomes :func:`agent_source` (as with ``%load -s``).

    ``%agent NAME as NEW`` also binds ``NEW``, when the notebook has no such name yet, to
    the reference of the exercise whose piece is ``NEW``, marked as the reference: until
    the learner runs their edited cell, its checker says "not written yet" instead of
    failing on a missing name (a headless run, which drops the cell's new text, too).
    """
    try:
        text = agent_source(line)
    except ValueError as exc:
        print(exc)
        return
    from IPython import get_ipython

    shell = get_ipython()
    shell.set_next_input(text, replace=True)
    words = line.split()
    new = words[2] if len(words) == 3 and words[1] == "as" else None
    exercise = next((e.name for e in CORE.values() if e.piece == new), None)
    if exercise is not None and new not in shell.user_ns:
        shell.user_ns[new] = _rebind(reference(exercise), vars(agent), new)


def register_magic() -> bool:
    """Register ``%agent`` in the running IPython, if there is one; True when registered.

    Outside IPython (a script, the tests) nothing happens: IPython is not even imported.
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    shell.register_magic_function(agent_magic, magic_kind="line", magic_name="agent")
    return True


# --------------------------------------------------------------------------- download

#: The one sentence beside the download link.
DOWNLOAD_SENTENCE = (
    "Binder keeps nothing between sessions: save your agent (right-click the "
    "link, Save Link As) and upload it beside the notebooks next time."
)


def download_link():
    """A link to ``my_agent.py`` with :data:`DOWNLOAD_SENTENCE`; a line saying so if none is saved.

    Returns an ``IPython.display.FileLink`` (its text form is the sentence and the path).
    """
    from IPython.display import FileLink

    path = agent_path()
    if not path.exists():
        print(f"Nothing is saved yet: {path.name} appears when a checker passes.")
        return None

    class AgentLink(FileLink):
        def __repr__(self):
            return f"{DOWNLOAD_SENTENCE} {os.path.abspath(self.path)}"

    try:
        shown = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        shown = str(path)
    return AgentLink(shown, result_html_prefix=DOWNLOAD_SENTENCE + " ")


def check(name: str, fn) -> bool:
    """The core notebooks' checker: :func:`react_lab.workshop.exercises.check`, a piece
    that passes saved into the learner's ``my_agent.py`` (:func:`save_quietly`)."""
    return check_piece(name, fn, save=save_quietly)
