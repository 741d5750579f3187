"""A learner's agent on the bench: their ``my_agent.py`` (or the reference) run over the task set.

What ``react-lab ask --agent FILE`` and ``react-lab eval --agent FILE`` run. The file is the
one the core notebooks save (:mod:`react_lab.workshop.agent_file`), any path; ``reference``
is :func:`react_lab.agent.composed` (the file as it stands after notebook 08). It is read and
run as it is, never written to, and its functions are called as the notebooks call them:

* text: ``run_loop(question, model, tools, exemplars=..., max_steps=...)`` -> ``(answer,
  transcript)``, on the completion backend (``model.complete``);
* native: ``run_native(question, model, tools, exemplars=..., max_steps=...)`` -> ``(answer,
  messages)``, on the chat backend the bench uses (``model.chat``);
* each question's exemplar is the one the file's ``pick_exemplar(question, pool)`` picks from
  the development half's pool (notebook 08's final agent); a file without ``pick_exemplar``
  runs its loop's own default (``exemplars=None``).

The tasks, the scorer and the splits are the bench's (:mod:`react_lab.lab.experiments.tasks`,
:func:`react_lab.lab.experiments.ladder.choose_tasks`); each run is a record in the ladder's
shape, so :func:`react_lab.lab.experiments.ladder.summarize` gives the rate with its Wilson
interval, and a results file is saved fingerprinted (:mod:`react_lab.lab.experiments.results`,
experiment ``agent``) with the agent's code in its fingerprint: a changed file makes its
results stale. The code is read as Python (``ast``), so a changed comment or docstring does
not. The model is wrapped (:class:`Recorder`) to count the steps and tokens and keep each
completion; the learner's code cannot tell.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import dis
import inspect
import json
import re
import textwrap
import time
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ...cost import count_tokens
from ...tools import default_tools
from .evals import EVAL_MAX_STEPS, EVAL_MAX_TOKENS, config_of
from .tasks import Task, score

#: ``--agent reference``: the reference agent, :func:`react_lab.agent.composed`.
REFERENCE = "reference"
#: The function each protocol runs.
ENTRY = {"text": "run_loop", "native": "run_native"}
#: The notebook each function is written in, for the message when a file lacks it.
WRITTEN_IN = {
    "observe": "01",
    "run_loop": "02",
    "is_forged": "03",
    "prompt_tokens_at_step": "05",
    "run_native": "07",
    "pick_exemplar": "08",
}
#: Bump when a change here changes what a run does; saved results then read as stale.
CODE_VERSION = 1
#: Seconds a task may run; checked before each model call (a call in progress finishes).
TIMEOUT = 120.0


class AgentError(ValueError):
    """The agent file cannot be run: missing, not Python, failing on import, or lacking a
    function. The message names the file and what to do (the CLI prints it as one line)."""


class TimeUp(BaseException):
    """A task ran past its time: raised at the learner's next model call.

    A ``BaseException``, so an ``except Exception`` in the learner's code does not swallow it.
    """


# --------------------------------------------------------------------------- the file


@dataclass
class Agent:
    """A loaded agent: its label (``reference`` or the path given), its file, its names."""

    label: str
    path: Path | None
    names: dict

    def function(self, name: str, needed_by: str) -> Callable:
        """The agent's function ``name``; :class:`AgentError` naming it when there is none."""
        fn = self.names.get(name)
        if not callable(fn):
            where = f"notebook {WRITTEN_IN[name]}" if name in WRITTEN_IN else "the notebooks"
            raise AgentError(
                f"{self.label} has no function {name} (needed by {needed_by}); write it in "
                f"{where} (its checker saves it into my_agent.py), or use --agent reference"
            )
        return fn

    def entry(self, protocol: str) -> Callable:
        """The function ``protocol`` runs, checked to take the notebooks' call and to find
        every name it uses (and the functions it calls use) in the file."""
        name = ENTRY[protocol]
        fn = self.function(name, f"--protocol {protocol}")
        _takes(fn, name, ("question", None, {}), {"exemplars": None, "max_steps": 1}, self.label)
        for caller, missing in self.undefined(fn):
            piece = f" (notebook {WRITTEN_IN[missing]})" if missing in WRITTEN_IN else ""
            raise AgentError(
                f"{self.label}: {caller} uses {missing}, which the file does not define; "
                f"add it{piece} (or import it), or use --agent reference"
            )
        return fn

    def undefined(self, fn: Callable) -> list[tuple[str, str]]:
        """``(function, name)`` for each global name ``fn`` or a function of the file it calls
        reads and neither the file nor the builtins define (a piece never written)."""
        found, seen, todo = [], set(), [fn]
        while todo:
            f = todo.pop()
            code = getattr(f, "__code__", None)
            if code is None or f in seen or getattr(f, "__globals__", None) is not self.names:
                continue
            seen.add(f)
            for used in _global_names(code):
                if used in self.names:
                    todo.append(self.names[used])
                elif not hasattr(builtins, used):
                    found.append((f.__name__, used))
        return found

    @property
    def pick(self) -> Callable | None:
        """The agent's ``pick_exemplar``, checked to take ``(question, pool)``; None without."""
        fn = self.names.get("pick_exemplar")
        if not callable(fn):
            return None
        _takes(fn, "pick_exemplar", ("question", []), {}, self.label)
        return fn


def _global_names(code: types.CodeType) -> list[str]:
    """The global names ``code`` and the code nested in it read, in order of first use."""
    names = [i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _global_names(const)
    return list(dict.fromkeys(names))


def _takes(fn: Callable, name: str, args: tuple, kwargs: dict, label: str) -> None:
    """:class:`AgentError` unless ``fn`` can be called as the notebooks call ``name``."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        call = ", ".join(
            ["question", "model", "tools"][: len(args)] if len(args) == 3 else ["question", "pool"]
        )
        call += "".join(f", {k}=..." for k in kwargs)
        raise AgentError(
            f"{label}: {name} cannot be called as {name}({call}) ({exc}); "
            "the notebooks' version takes exactly that"
        ) from None
    except ValueError:  # a builtin without a signature: let the call itself tell
        return


def load_agent(spec: str) -> Agent:
    """Load ``spec``: ``reference``, or the path of a ``my_agent.py``; never writes anything.

    The file is compiled from its text and run in a module of its own (not imported: no
    ``.pyc`` is written beside it, nothing is added to ``sys.modules``). Raises
    :class:`AgentError` naming the file for a missing file, a folder, a file that does not
    parse or raises when run.
    """
    if spec == REFERENCE:
        from ... import agent

        return Agent(REFERENCE, None, vars(agent.composed()))
    path = Path(spec).expanduser()
    todo = (
        "give the path of your my_agent.py (the notebooks save it beside them), "
        "or --agent reference for the reference agent"
    )
    if not path.exists():
        raise AgentError(f"agent file {spec} not found; {todo}")
    if path.is_dir():
        raise AgentError(f"agent file {spec} is a folder; {todo}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentError(f"agent file {spec} cannot be read ({exc}); {todo}") from None
    module = types.ModuleType("my_agent")
    module.__file__ = str(path.resolve())
    try:
        code = compile(text, str(path), "exec")
    except SyntaxError as exc:
        raise AgentError(
            f"agent file {spec} does not run: SyntaxError at line {exc.lineno}: {exc.msg}; "
            "fix that line, or use --agent reference"
        ) from None
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:  # the learner's file: report, never a traceback
        frames = traceback.extract_tb(exc.__traceback__)
        line = next((f.lineno for f in reversed(frames) if f.filename == str(path)), "?")
        raise AgentError(
            f"agent file {spec} does not run: {type(exc).__name__} at line {line}: {exc}; "
            "fix it (python " + str(path) + " shows the traceback), or use --agent reference"
        ) from None
    return Agent(str(spec), path, module.__dict__)


def _code(fn: Callable) -> list[str]:
    """What the fingerprint holds of ``fn``: its code as :func:`ast.unparse` writes it back.

    The docstring is left out. Parsed and written back, code has no comments and one layout,
    so a reworded comment, a rewrapped docstring or a reformatted line is not a change; a
    changed name, value or statement is.
    """
    node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    if ast.get_docstring(node) is not None:
        node.body = node.body[1:]
    return ast.unparse(node).splitlines()


def reference_code(entries: Sequence[str], without: tuple[str, ...] = ()) -> dict:
    """The reference agent's code that ``entries`` run, as a results fingerprint holds it.

    ``{"pieces": {name: code}, "reads": {name: value}}``: each piece of
    :func:`react_lab.agent.composed` that the two loops run, found from ``entries`` (``run_loop``,
    ``run_native``) by the names their code uses (:func:`_code`: no docstring, comments or
    layout), and the patterns and values they read from the module (``ACTION_RE``,
    ``ANSWER_RE``, ``STOP``). ``without``: the edits left out, as :func:`react_lab.agent.composed`.
    """
    from ... import agent as reference

    pieces = vars(reference.composed(without=without))
    code, reads, todo = {}, {}, list(entries)
    while todo:
        name = todo.pop()
        if name in code:
            continue
        code[name] = _code(pieces[name])
        for used in _names(pieces[name]):
            value = getattr(reference, used, None)
            if used in pieces:
                todo.append(used)
            elif isinstance(value, re.Pattern):
                reads[used] = value.pattern
            elif isinstance(value, (str, int, float, list, tuple)):
                reads[used] = value
    return {"pieces": dict(sorted(code.items())), "reads": dict(sorted(reads.items()))}


def _names(fn: Callable) -> set[str]:
    """The names ``fn``'s code reads, its default arguments' included (``stop=STOP``)."""
    node = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def agent_code(spec: str) -> str:
    """The agent's code as its results' fingerprint holds it: the file read as Python.

    ``ast.unparse`` of the module without its docstrings, so a comment or a docstring may
    change and the results stay current, and any change to the code makes them stale. The
    reference's is the code its loops and picker reach (:func:`reference_code`). A file
    that is gone or does not parse is ``"missing: PATH"`` or ``"unparsed: TEXT"``: never a
    current fingerprint of other code.
    """
    if spec == REFERENCE:  # what its loops and picker reach: other pieces may change freely
        return json.dumps(reference_code(("run_loop", "run_native", "pick_exemplar")))
    path = Path(spec).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return f"missing: {path}"
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return f"unparsed: {text}"
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def dev_pool() -> list:
    """The exemplars ``pick_exemplar`` picks from: one per development-half task (notebook 08's)."""
    from .exemplars import get_pool

    return [entry.exemplar for entry in get_pool()]


# --------------------------------------------------------------------------- one run


class Recorder:
    """The model as the learner's code sees it: each call passed on, counted and kept.

    ``steps`` holds one dict per call (the completion's text, its finish reason, its
    tokens); ``first_prompt`` what the first call sent. From ``deadline``
    (``time.perf_counter()`` seconds) on, the next call raises :class:`TimeUp`. Anything
    else is the model's own (``name``, ``n_ctx``, ...).
    """

    def __init__(self, model, deadline: float | None = None):
        self.model = model
        self.deadline = deadline
        self.steps: list[dict] = []
        self.first_prompt = None

    def __getattr__(self, name):
        return getattr(self.model, name)

    def _sent(self, prompt) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise TimeUp
        if self.first_prompt is None:
            self.first_prompt = prompt

    def _kept(self, out, text: str) -> None:
        self.steps.append(
            {
                "completion": text,
                "finish_reason": getattr(out, "finish_reason", None),
                "prompt_tokens": getattr(out, "prompt_tokens", 0) or 0,
                "completion_tokens": getattr(out, "completion_tokens", 0) or 0,
            }
        )

    def complete(self, prompt, *args, **kwargs):
        self._sent(prompt)
        out = self.model.complete(prompt, *args, **kwargs)
        self._kept(out, out.text)
        return out

    def chat(self, messages, *args, **kwargs):
        self._sent(json.loads(json.dumps(list(messages), default=str)))
        out = self.model.chat(messages, *args, **kwargs)
        self._kept(out, out.text or json.dumps(out.message(), ensure_ascii=False))
        return out


def stopped_by(answer, steps: int, max_steps: int) -> str:
    """How a run that returned ``answer`` ended: ``answer``, or ``max_steps`` for no answer
    or a labelled best effort (``[best effort] ...``) after the steps ran out."""
    if answer is None or str(answer).lstrip().startswith("[best effort]"):
        return "max_steps" if steps >= max_steps else "no_answer"
    return "answer"


def run_question(
    agent: Agent,
    question: str,
    model,
    tools: dict,
    *,
    pick: bool = True,
    pool: Sequence | None = None,
    timeout: float | None = TIMEOUT,
    protocol: str = "text",
    max_steps: int = EVAL_MAX_STEPS,
) -> dict:
    """Run the agent's loop on ``question`` once; return what happened.

    ``{"answer", "stopped_by", "error", "exemplars", "first_prompt", "output"
    (the transcript or the messages), "steps" (:class:`Recorder`'s), "seconds"}``. The
    exemplar is the file's ``pick_exemplar``'s from ``pool`` (default :func:`dev_pool`)
    unless ``pick`` is False or the file has none. An exception in the learner's code
    ends the run with ``stopped_by="error"`` and ``error`` naming it and its line
    (``context_window`` when the prompt outgrew the model's window; ``timeout`` after
    ``timeout`` seconds).
    """
    from ..backends.llama_state import ContextWindowExceeded

    loop = agent.entry(protocol)
    chooser = agent.pick if pick else None
    t0 = time.perf_counter()
    recorder = Recorder(model, None if timeout is None else t0 + timeout)
    answer, output, error, exemplars = None, None, None, None
    try:
        if chooser is not None:
            exemplars = [chooser(question, list(dev_pool() if pool is None else pool))]
        answer, output = loop(question, recorder, tools, exemplars=exemplars, max_steps=max_steps)
        end = stopped_by(answer, len(recorder.steps), max_steps)
    except TimeUp:
        end = "timeout"
    except ContextWindowExceeded as exc:
        end, error = "context_window", str(exc)
    except Exception as exc:  # noqa: BLE001 -- the learner's code: the run ends, the eval goes on
        end, error = "error", _where(exc, agent)
    if answer is not None and not isinstance(answer, str):
        answer = str(answer)
    run = dict(answer=answer, stopped_by=end, error=error, exemplars=exemplars, output=output)
    seconds = time.perf_counter() - t0
    return {
        **run,
        "first_prompt": recorder.first_prompt,
        "steps": recorder.steps,
        "seconds": seconds,
    }


def run_text(run: dict) -> str:
    """A run of :func:`run_question` as ``react-lab ask --agent`` prints it.

    The question, then what followed the first prompt: the transcript's text (text), or one
    line per message (native: the assistant's text and calls, each tool's result).
    """
    out, first = run["output"], run["first_prompt"]
    if isinstance(out, str):
        if isinstance(first, str) and out.startswith(first):
            asked = first.rfind("Question:")
            shown = first[asked:] if asked >= 0 else ""
            return (
                f"(the first prompt: {count_tokens(first)} cl100k tokens; its end:)\n"
                f"{shown}{out[len(first) :]}"
            )
        return out
    if isinstance(out, list):
        plain = json.loads(json.dumps(out, default=str))
        start = len(first) - 1 if isinstance(first, list) and plain[: len(first)] == first else 0
        lines = []
        for m in plain[max(start, 0) :]:
            if not isinstance(m, dict):
                lines.append(str(m))
                continue
            text = m.get("content") or ""
            lines.append(f"{m.get('role', '?')}: {text}".rstrip())
            for call in m.get("tool_calls") or []:
                fn = call.get("function", {})
                lines.append(f"  calls {fn.get('name')}({fn.get('arguments')})")
        return "\n".join(lines)
    return "" if out is None else str(out)


def _where(exc: Exception, agent: Agent) -> str:
    """``"KeyError at my_agent.py line 12: 'x'"``: the exception and the agent's last line."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if agent.path is not None and f.filename == str(agent.path)]
    if agent.path is None:
        own = [f for f in frames if f.filename.endswith("agent.py")]
    at = f" at {Path(own[-1].filename).name} line {own[-1].lineno}" if own else ""
    return f"{type(exc).__name__}{at}: {exc}"[:300]


def run_task(agent: Agent, task: Task, model, tools: dict, **options) -> dict:
    """Run ``task`` once (``options``: :func:`run_question`'s); return its record, as the ladder's.

    ``agent``, ``task_id``, ``category``, ``trial`` (0), ``seed`` (0), ``temperature`` (0),
    ``correct`` (:func:`react_lab.lab.experiments.tasks.score`), ``answer``, ``gold``,
    ``stopped_by``, ``error``, ``n_steps`` (model calls), ``prefix_tokens`` (the first
    prompt in cl100k tokens), ``exemplar_tokens``, ``exemplar_ids``, ``prompt_tokens`` /
    ``completion_tokens`` (the model's own, summed over the calls), ``seconds`` and
    ``steps`` (each call's completion and tokens).
    """
    run = run_question(agent, task.question, model, tools, **options)
    first = run["first_prompt"]
    shown = run["exemplars"] or []
    return {
        "agent": agent.label,
        "task_id": task.id,
        "category": task.category,
        "trial": 0,
        "seed": 0,
        "temperature": 0.0,
        "correct": score(run["answer"], task),
        "answer": run["answer"],
        "gold": task.gold,
        "stopped_by": run["stopped_by"],
        "error": run["error"],
        "n_steps": len(run["steps"]),
        "prefix_tokens": count_tokens(first if isinstance(first, str) else json.dumps(first))
        if first is not None
        else 0,
        "exemplar_tokens": sum(count_tokens(e.render()) for e in shown if hasattr(e, "render")),
        "exemplar_ids": [getattr(e, "source", "") or "default" for e in shown],
        "prompt_tokens": sum(s["prompt_tokens"] for s in run["steps"]),
        "completion_tokens": sum(s["completion_tokens"] for s in run["steps"]),
        "seconds": round(run["seconds"], 2),
        "steps": run["steps"],
    }


def run_agent(
    agent: Agent,
    tasks: Sequence[Task],
    model,
    *,
    protocol: str = "text",
    max_steps: int = EVAL_MAX_STEPS,
    timeout: float | None = TIMEOUT,
    progress: Callable | None = print,
) -> list[dict]:
    """Run every task once (:func:`run_task`); return the records in task order.

    ``model`` is a backend (completion for text, chat for native) or a function ``task ->
    backend`` (the scripted baselines of :mod:`react_lab.lab.experiments.evals`).
    ``progress`` gets one line per task (None: silent).
    """
    tools, pool = default_tools(), dev_pool()
    per_task = not (hasattr(model, "complete") or hasattr(model, "chat"))
    records, options = [], dict(protocol=protocol, max_steps=max_steps, pool=pool, timeout=timeout)
    for task in tasks:
        rec = run_task(agent, task, model(task) if per_task else model, tools, **options)
        records.append(rec)
        if progress:
            progress(
                f"{'✓' if rec['correct'] else '✗'} {task.id:<20} {rec['stopped_by']:<10} "
                f"{rec['n_steps']} steps {rec['seconds']:5.1f}s "
                f"answer={str(rec['answer'])[:50]!r}"
                + (f"  {rec['error']}" if rec["error"] else "")
            )
    return records


# --------------------------------------------------------------------------- results files


def results_config(
    spec: str, protocol: str, model: str, split: str, subset: str, tasks, picks: bool, **more
) -> dict:
    """The ``config`` an agent results file is saved (and fingerprinted) with.

    ``agent`` is ``reference`` or the file's absolute path (read again when the file is
    loaded, for its fingerprint); ``exemplars`` says how each question's was chosen
    (``picks``: by the file's ``pick_exemplar``). ``more``: ``max_steps`` (default the
    evaluation's), ``tasks_file`` (the task file run, when it is not a shipped split).
    """
    max_steps, tasks_file = more.get("max_steps", EVAL_MAX_STEPS), more.get("tasks_file")
    config = {
        "agent": spec if spec == REFERENCE else str(Path(spec).expanduser().resolve()),
        "protocol": protocol,
        "model": model,
        "split": split,
        "subset": subset,
        "task_ids": [t.id for t in tasks],
        "max_steps": max_steps,
        "exemplars": "pick_exemplar" if picks else "default",
        "trials": 1,
        "temperature": 0.0,
        "seed": 0,
    }
    if tasks_file:
        config["tasks_file"] = str(Path(tasks_file).resolve())
    return config


def fingerprint_inputs(config: dict):
    """The fingerprint inputs of an agent results file (:data:`results.EXPERIMENTS`).

    The prompt part holds the agent's code (:func:`agent_code`), the prompt surface of its
    protocol (:func:`react_lab.lab.experiments.evals.config_of`: instructions, tool
    descriptions, the default exemplar; or the system message), the tools' schemas and,
    when questions got picked exemplars, the pool they were picked from.
    """
    from .ladder import tasks_of
    from .results import Inputs
    from .tasks import SCORER_VERSION  # read at call time, as the ladder's

    tools = default_tools()
    tasks = tasks_of(config)
    chosen = [tasks[i] for i in config["task_ids"]]
    surface = config_of(
        config["protocol"], tools, max_steps=config["max_steps"], max_tokens=EVAL_MAX_TOKENS
    )["surface"]
    pool = [e.render() for e in dev_pool()] if config["exemplars"] == "pick_exemplar" else None
    return Inputs(
        model=config["model"],
        prompt={
            "agent": agent_code(config["agent"]),
            "surface": surface,
            "schemas": [t.openai_schema() for t in tools.values()],
            "pool": pool,
        },
        tasks=[dataclasses.asdict(t) for t in chosen],
        code=CODE_VERSION,
        scorer=SCORER_VERSION,
    )


def save(
    name: str,
    records: Sequence[dict],
    config: dict,
    *,
    command: str,
    seconds: float | None = None,
    directory: str | Path | None = None,
    overwrite: bool = False,
) -> Path:
    """Save a finished run as results file ``name`` (``{"summary", "records"}``, as the
    ladder's); return its path. ``seconds``: the run's wall time (default: the records'
    sum). An existing file is refused unless ``overwrite``."""
    from . import results
    from .ladder import summarize

    return results.save(
        name,
        {"summary": summarize(records), "records": list(records)},
        experiment="agent",
        config=config,
        command=command,
        seconds=sum(r["seconds"] for r in records) if seconds is None else seconds,
        directory=directory,
        overwrite=overwrite,
    )
