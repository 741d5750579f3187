"""The migration from the text protocol to native tool calling: one billing agent written twice.

:func:`text_agent` and :func:`native_agent` are the same agent -- same tools, same guards,
same schema check, same step limit -- over the two carriers of a tool call, each about 25
lines of the package's pieces. Read them side by side. A line's part is named by its
trailing comment (``# parser``, ``# stop sequence``, ``# exemplars``, ``# tools in English``
or ``# tool schemas``, ``# guard: ...``); a line without one is the loop. :func:`agent_diff`
diffs the two as code (:mod:`difflib`) and counts, by part, the lines kept, renamed, moved,
deleted and added.

:func:`step_problems` reads a step for the three problems native calling removes (seed
003): parsing the action out of free text, syntactically invalid arguments, and not knowing
when the model is done (:data:`PROBLEMS`). The experiment that runs both agents over the same
questions is :mod:`react_lab.lab.notebook.migration_runs`.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import io
import re
import textwrap
import time
import tokenize
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from ..._parsing.leaks import leaked_calls
from ...loop import end_step
from ...parser import parse
from ...protocol import OBSERVATION, STOP, THOUGHT, build_prompt, unknown_tool_message
from ...schema import check_arguments
from ...tool_calls import conversation, first_messages, malformed_reply_message, record_calls
from ...tools import Observation, Tool, tool_schemas
from ...trace import RunResult, Step, Transcript
from ..guards import LabGuards, LabWatch, offered_tools

#: Model calls per run and completion tokens per call: the evaluation's limits (``react-lab eval``).
MAX_STEPS, MAX_TOKENS = 4, 128


class Guards:
    """The guards as the two agents hold them: the lab's settings and the run in progress.

    The agents keep the spelling their code was written in, one object whose ``start`` begins a
    run, because the shipped migration results fingerprint their code lines
    (:func:`react_lab.lab.notebook.migration_runs.fingerprint_inputs`). ``Guards(**limits)``
    holds a :class:`react_lab.lab.guards.LabGuards` with those limits (:meth:`off`: every guard
    off); :meth:`start` begins a run's :class:`react_lab.lab.guards.LabWatch`, and the checks
    the agents call (``spend``, ``run_tool``, ``stop_reason``) are that run's.
    """

    def __init__(self, settings: LabGuards | None = None, **limits):
        self.settings = settings if settings is not None else LabGuards(**limits)
        self.watch: LabWatch = self.settings.start()

    @classmethod
    def off(cls, **overrides) -> "Guards":
        """Every guard switched off (:meth:`react_lab.guards.Guards.off`)."""
        return cls(LabGuards.off(**overrides))

    def start(self, question: str = "", exemplars=()) -> None:
        """Begin a run of ``question``: its counters, clock and pages start empty."""
        self.watch = self.settings.start(question, exemplars)

    def offered_tools(self, tools: dict[str, Tool]) -> dict[str, Tool]:
        """The tools the agents offer (``more`` with them while observations are paged)."""
        return self.settings.offered_tools(tools)

    def spend(self, completion) -> None:
        """The run's :meth:`react_lab.guards.Watch.spend`."""
        self.watch.spend(completion)

    def run_tool(self, tools: dict[str, Tool], name: str, args, **options) -> Observation:
        """The run's :meth:`react_lab.guards.Watch.run_tool`."""
        return self.watch.run_tool(tools, name, args, **options)

    def stop_reason(self) -> str | None:
        """The run's :meth:`react_lab.guards.Watch.stop_reason`."""
        return self.watch.stop_reason()


# --------------------------------------------------------------------------- the two agents


def text_agent(
    question: str,
    model,
    tools: dict[str, Tool],
    *,
    exemplars=(),
    guards: Guards | None = None,
    max_steps: int = MAX_STEPS,
    max_tokens: int = MAX_TOKENS,
) -> RunResult:
    """The billing agent over the text protocol.

    ``model`` has ``complete(prompt, stop=, max_tokens=)``.
    """
    guards = guards if guards is not None else Guards()
    guards.start(question)
    tools = offered_tools(tools, guards)  # guard: more[page] reads the rest of a cut observation
    transcript = Transcript()
    prompt = build_prompt(question, tools.values(), exemplars)  # tools in English, exemplars
    transcript.add("prompt", prompt)
    steps = []
    for number in range(1, max_steps + 1):
        t0 = time.perf_counter()
        completion = model.complete(  # stop sequence
            transcript.text, stop=STOP, max_tokens=max_tokens
        )
        guards.spend(completion)  # guard: token and money budgets
        # an action or an answer, out of free text
        parsed = parse(completion.text, tools=list(tools))  # parser
        # what it read, never a forgery
        transcript.add("model", parsed.kept.rstrip("\n") + "\n")  # parser
        step = Step.of(number, completion, thought=parsed.thought, forged=parsed.forged)
        if parsed.kind == "final":  # parser: the Answer label says the model is done
            step.answer = parsed.answer
        elif parsed.kind == "error":  # parser: nothing it could read; the reason goes back
            step.error = step.observation = parsed.reason
        else:
            name, args = parsed.tool, named_args(tools, parsed.tool, parsed.args)  # parser
            # schema check, repeats, approval, size
            observation = act(guards, tools, name, args)  # guard
            step.action = {"tool": name, "args": args}
            step.record(observation)
        if step.observation is not None:
            transcript.add("loop", f"{OBSERVATION}: {step.observation}\n{THOUGHT}:")
        steps.append(step)
        if end_step(step, guards, number == max_steps, t0):  # guard: budgets, refusals, step limit
            break
    return RunResult.from_steps(question, steps, transcript)


def native_agent(
    question: str,
    model,
    tools: dict[str, Tool],
    *,
    exemplars=(),
    guards: Guards | None = None,
    max_steps: int = MAX_STEPS,
    max_tokens: int = MAX_TOKENS,
) -> RunResult:
    """The billing agent over native tool calls.

    ``model`` has ``chat(messages, tools=, max_tokens=)``.
    """
    guards = guards if guards is not None else Guards()
    guards.start(question)
    tools = offered_tools(tools, guards)  # guard: more[page] reads the rest of a cut observation
    messages = first_messages(question, tools, exemplars=exemplars)  # exemplars, as past messages
    schemas = tool_schemas(tools)  # tool schemas
    steps = []
    for number in range(1, max_steps + 1):
        t0 = time.perf_counter()
        # tool schemas, in every request
        reply = model.chat(messages, tools=schemas, max_tokens=max_tokens)  # tool schemas
        guards.spend(reply)  # guard: token and money budgets
        messages.append(reply.message())
        # a call in the text is no answer
        leaked = [] if reply.tool_calls else leaked_calls(reply.content)  # parser
        step = Step.of(number, reply, thought=reply.thought, leaked=bool(leaked))
        if reply.content and not reply.tool_calls and not leaked:  # no call: the answer
            step.answer = reply.content
        elif not reply.tool_calls:
            # nothing to run (cut off, empty, a leaked call); the reason goes back
            step.error = step.observation = malformed_reply_message(reply, max_tokens)
            messages.append({"role": "user", "content": step.observation})
        else:
            results = []
            for call in reply.tool_calls:  # a reply may hold several calls
                name, args = call["function"]["name"], call["function"]["arguments"]
                # schema check, repeats, approval, size
                observation = act(guards, tools, name, args)  # guard
                results.append(observation)
                message = {"role": "tool", "tool_call_id": call["id"], "content": observation.text}
                messages.append(message)
            record_calls(step, reply.tool_calls, results)
        steps.append(step)
        if end_step(step, guards, number == max_steps, t0):  # guard: budgets, refusals, step limit
            break
    return RunResult.from_steps(question, steps, conversation(messages))


# --------------------------------------------------------------------------- what both agents share


def named_args(tools: dict[str, Tool], name: str, args: list | dict) -> list | dict:
    """The text protocol's positional arguments named by the tool's schema, in order.

    ``["cus_4417", "2026-07-01"]`` for ``list_invoices`` is ``{"customer_id": "cus_4417",
    "since": "2026-07-01"}``; one more than the schema declares is ``"argument_3"`` (which
    the schema check refuses). A dict, or the arguments of an unknown tool, come back as they are.
    """
    tool = tools.get(name)
    if tool is None or isinstance(args, dict):
        return args
    names = list(tool.parameters.get("properties", {}))
    return {names[i] if i < len(names) else f"argument_{i + 1}": a for i, a in enumerate(args)}


def call_problem(tools: dict[str, Tool], name: str, args) -> str | None:
    """Why the schema check refuses a call, or None.

    It refuses an undeclared tool, and arguments its schema rejects.
    ``args`` is a dict or a provider's JSON string (:func:`react_lab.schema.check_arguments`).
    """
    tool = tools.get(name)
    if tool is None:
        return unknown_tool_message(str(name), tools)
    errors = check_arguments(tool, args)[1]
    return f"{name} was not run; fix its arguments: {'; '.join(errors)}" if errors else None


def act(guards: Guards, tools: dict[str, Tool], name: str, args) -> Observation:
    """Run one call as both agents do: the schema check, then the guards.

    The guards: repeats, approval, size. Never raises.
    """
    problem = call_problem(tools, name, args)
    if problem is not None:
        return Observation(f"Error: {problem}", error=problem)
    return guards.run_tool(tools, name, check_arguments(tools[name], args)[0])


# --------------------------------------------------------------------------- the diff, as code

#: A line's part, from the first words of its trailing comment; a line with none is the loop.
TAGS = {
    "parser": "parser",
    "stop sequence": "stop sequence",
    "exemplars": "exemplars",
    "tools in English": "tools",
    "tool schemas": "tools",
    "guard": "guards",
}
#: The parts, in table order ("tools": the tools described in English, or as schemas).
PARTS = ("parser", "stop sequence", "exemplars", "tools", "loop", "guards")


@dataclass(frozen=True)
class Line:
    """One line of an agent: its ``code``, its ``parts``, the ``text`` as written.

    ``code`` has no comment and no indentation.
    """

    code: str
    parts: tuple[str, ...]
    text: str


def agent_lines(fn: Callable, *, header: bool = False) -> list[Line]:
    """The lines of ``fn``'s body after its docstring, each with its parts (:data:`TAGS`).

    A statement written over several lines takes its parts from the comments on any of
    them; blank lines are skipped. The source is read with :mod:`tokenize`, so a ``#``
    inside a string is not a comment. With ``header``, the ``def`` line(s) come first.
    """
    source = inspect.getsource(fn)
    physical = source.splitlines()
    comments: dict[int, tuple[int, str]] = {}  # row -> (column, comment text)
    statements: list[list[int]] = []
    rows: list[int] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = (tok.start[1], tok.string.lstrip("# "))
        elif tok.type == tokenize.NEWLINE:
            statements, rows = statements + [rows], []
        elif tok.type not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            rows += [r for r in range(tok.start[0], tok.end[0] + 1) if r not in rows]
    lines = []
    for number, rows in enumerate(statements):
        if (number == 0 and not header) or (
            number == 1 and physical[rows[0] - 1].strip()[:1] in "\"'"
        ):
            continue  # the signature (the two differ in name only), the docstring
        heads = [comments[r][1].split(":")[0] for r in rows if r in comments]
        parts = tuple(
            dict.fromkeys(TAGS[t.strip()] for h in heads for t in h.split(",") if t.strip() in TAGS)
        ) or ("loop",)
        for r in rows:
            text = physical[r - 1][: comments[r][0]] if r in comments else physical[r - 1]
            lines.append(Line(text.strip(), parts, physical[r - 1]))
    return lines


#: Names that mean the same in both agents, old -> new: the model's output is a *completion*
#: over the text protocol and a *reply* over chat. A line equal after renaming is kept, renamed.
RENAMES = {"completion": "reply"}


@dataclass
class AgentDiff:
    """Two agents' lines, diffed.

    ``kept``, ``renamed`` and ``moved`` pairs, ``deleted`` and ``added`` lines.

    Kept: the same code at the same place; renamed: the same after :data:`RENAMES`; moved:
    the same code at another place. A changed line counts as one deleted and one added,
    as ``git diff --stat`` counts it; :meth:`html` shows which line took which one's job.
    """

    old: list[Line]
    new: list[Line]
    kept: list[tuple[Line, Line]]
    renamed: list[tuple[Line, Line]]
    moved: list[tuple[Line, Line]]
    deleted: list[Line]
    added: list[Line]

    def by_part(self) -> list[dict]:
        """One row per part of :data:`PARTS`, then ``"all"``.

        Each row: lines in each agent, kept, renamed, moved, deleted, added.

        A line that serves two parts (``build_prompt`` writes the tools and the exemplars)
        counts in both rows; the ``"all"`` row counts each line once. In every row the text
        agent's lines are kept + renamed + moved + deleted, the native agent's kept +
        renamed + moved + added.
        """

        def count(lines, part):
            return sum(part in line.parts for line in lines) if part != "all" else len(lines)

        return [
            {
                "part": p,
                "text agent": count(self.old, p),
                "native agent": count(self.new, p),
                **{
                    k: count([x for x, _ in getattr(self, k)], p)
                    for k in ("kept", "renamed", "moved")
                },
                "deleted": count(self.deleted, p),
                "added": count(self.added, p),
            }
            for p in (*PARTS, "all")
        ]

    def unified(self) -> str:
        """The two agents as one unified diff, each line with its part comment.

        :func:`difflib.unified_diff`, of whole bodies.
        """
        old, new = [line.text for line in self.old], [line.text for line in self.new]
        return "\n".join(
            difflib.unified_diff(
                old, new, "text agent", "native agent", n=max(len(old), len(new)), lineterm=""
            )
        )

    def html(self, wrap: int = 70) -> str:
        """The two agents side by side, changes highlighted, lines wrapped at ``wrap``.

        Made by :class:`difflib.HtmlDiff`.
        """
        table = difflib.HtmlDiff(wrapcolumn=wrap).make_table(
            [line.text for line in self.old],
            [line.text for line in self.new],
            "text protocol",
            "native tool calling",
        )
        return DIFF_STYLE + table


#: The colours of :meth:`AgentDiff.html` (the classes :class:`difflib.HtmlDiff` writes).
DIFF_STYLE = (
    "<style>table.diff{font-family:monospace;font-size:80%;border:none} "
    ".diff_add{background:#bbf7d0} .diff_chg{background:#fef08a} .diff_sub{background:#fecaca} "
    ".diff_next,.diff_header{color:#6b7280}</style>"
)


def _renamed(code: str) -> str:
    for old, new in RENAMES.items():
        code = re.sub(rf"\b{old}\b", new, code)
    return code


def agent_diff(old: Callable | None = None, new: Callable | None = None) -> AgentDiff:
    """Diff two agents line by line, comments left out.

    By default :func:`text_agent` and :func:`native_agent`.
    """
    a, b = agent_lines(old or text_agent), agent_lines(new or native_agent)
    matcher = difflib.SequenceMatcher(
        None, [_renamed(x.code) for x in a], [y.code for y in b], autojunk=False
    )
    same, deleted, added = [], [], []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            same += list(zip(a[i1:i2], b[j1:j2]))
        else:
            deleted += a[i1:i2]
            added += b[j1:j2]
    moved = []
    for line in list(deleted):  # the same code at another place is a move, not a change
        twin = next((y for y in added if y.code == _renamed(line.code)), None)
        if twin is not None:
            moved.append((line, twin))
            deleted.remove(line)
            added.remove(twin)
    kept = [(x, y) for x, y in same if x.code == y.code]
    renamed = [(x, y) for x, y in same if x.code != y.code]
    return AgentDiff(a, b, kept, renamed, moved, deleted, added)


# --------------------------------------------------------------------------- the three problems

#: The three problems native tool calling removes (seed 003), as :func:`step_problems` counts them.
PROBLEMS = {
    "unreadable": "parsing the action out of free text: a call the loop could not read "
    "(text: a parser error on an Action line, a forged Observation; native: a call "
    "leaked into the text, a reply cut off before its JSON was complete)",
    "invalid": "syntactically invalid arguments: a call refused by the schema check "
    "(an undeclared tool, or arguments its schema rejects)",
    "undone": "when is it done: a reply that was neither a call nor an answer, or ran on past its "
    "call or answer into another step (text: no Action or Answer label, or more text after "
    "the first; native: a complete reply with no call and an empty answer)",
}

_ACTION_LABEL = re.compile(
    r"^[ \t>*_#]*action\b[^\n:\uff1a]{0,20}[:\uff1a]", re.IGNORECASE | re.MULTILINE
)


def step_problems(step: Step, protocol: str, tools: dict[str, Tool]) -> dict[str, int]:
    """The three problems (:data:`PROBLEMS`) in one step of either agent, from what it recorded.

    Returns ``{"unreadable": 0|1, "invalid": refused calls, "undone": 0|1, "calls": calls
    attempted}``. ``tools`` are the tools the agent offered (with ``more``:
    :meth:`react_lab.lab.guards.LabGuards.offered_tools`). The text step is read again by
    :func:`react_lab.parser.parse`, as the agent read it. Raises ValueError for another protocol.
    """
    if protocol == "native":
        calls = [*step.action.get("calls", [step.action])] if step.action else []
        refused = sum(call_problem(tools, c["tool"], c["args"]) is not None for c in calls)
        open_reply = not calls and step.answer is None
        cut = open_reply and step.finish_reason == "length"
        return {
            "unreadable": int(step.leaked or cut),
            "invalid": refused,
            "undone": int(open_reply and not cut and not step.leaked),
            "calls": len(calls),
        }
    if protocol != "text":
        raise ValueError(f"protocol is 'text' or 'native', not {protocol!r}")
    text = step.completion
    parsed = parse(text, tools=list(tools), finish_reason=step.finish_reason, max_tokens=None)
    undeclared = parsed.kind == "error" and (parsed.reason or "").startswith("unknown tool")
    invalid = undeclared or (
        parsed.kind == "action"
        and call_problem(tools, parsed.tool, named_args(tools, parsed.tool, parsed.args))
        is not None
    )
    attempted = _ACTION_LABEL.search(text) is not None or parsed.tool is not None
    unreadable = parsed.forged or (parsed.kind == "error" and attempted and not undeclared)
    kept, whole = parsed.kept.strip(), text.strip()
    ran_on = parsed.kind != "error" and whole.startswith(kept) and bool(whole[len(kept) :].strip())
    undone = (parsed.kind == "error" and not attempted and not parsed.forged) or (
        ran_on and not parsed.forged
    )
    return {
        "unreadable": int(unreadable),
        "invalid": int(invalid),
        "undone": int(undone),
        "calls": int(parsed.kind == "action" or undeclared),
    }


def run_problems(result: RunResult, protocol: str, tools: dict[str, Tool]) -> dict[str, int]:
    """:func:`step_problems` summed over a run's steps.

    Plus ``"steps"``: how many model calls it made.
    """
    total = Counter({"unreadable": 0, "invalid": 0, "undone": 0, "calls": 0})
    for step in result.steps:
        total.update(step_problems(step, protocol, tools))
    return {**total, "steps": len(result.steps)}


# ------------------------------------------------------------ the learner's two loops (notebook 07)


class Watched:
    """A model that keeps what it said, in ``said``.

    Every completion (text) or reply (chat), in order.

    Wraps a text backend (``complete``) or a chat backend (``chat``) and passes every call
    through unchanged, so the learner's loops run as they do on the model itself; their
    steps are counted afterwards (:func:`completion_problems`, :func:`reply_problems`).
    """

    def __init__(self, model):
        self.model, self.said = model, []

    def complete(self, prompt, **options):
        completion = self.model.complete(prompt, **options)
        self.said.append(completion)
        return completion

    def chat(self, messages, **options):
        reply = self.model.chat(messages, **options)
        self.said.append(reply)
        return reply

    def __getattr__(self, name):
        return getattr(self.model, name)


def completion_problems(text: str, tools: dict[str, Tool]) -> dict[str, int]:
    """The three problems in one completion, as the learner's text loop reads it (``ACTION_RE``).

    ``unreadable``: a line labelled Action that the anchored regex does not read, or a
    forged ``Observation`` line; ``invalid``: a call the schema check refuses (an undeclared
    tool, arguments its schema rejects: :func:`call_problem`); ``undone``: neither a call nor
    an answer, or text after the answer's line (the model went on into another step).
    Returns ``{"unreadable", "invalid", "undone", "calls"}`` (0 or 1 each).
    """
    from ...protocol import ACTION_RE

    match = ACTION_RE.search(text)
    answered = "Answer:" in text  # the loop's rule: an answer ends the run
    forged = re.search(r"^Observation", text, re.MULTILINE) is not None
    attempted = _ACTION_LABEL.search(text) is not None
    invalid = 0
    if match and not answered:
        name, args = match.group(1), [a.strip() for a in match.group(2).split(",")]
        invalid = int(call_problem(tools, name, named_args(tools, name, args)) is not None)
    after_answer = text.split("Answer:", 1)[1].partition("\n")[2] if answered else ""
    # the loop keeps the answer's line; the rest is another step
    ran_on = bool(after_answer.strip())
    return {
        "unreadable": int(forged or (attempted and not match and not answered)),
        "invalid": invalid,
        "undone": int(ran_on or (not answered and not attempted and not forged)),
        "calls": int(bool(match) and not answered),
    }


def reply_problems(reply, tools: dict[str, Tool]) -> dict[str, int]:
    """The three problems in one chat reply, as the learner's native loop reads it.

    The loop reads it with ``reply_calls``.

    ``unreadable``: a call that leaked into the text (only the call-markup reader finds it),
    or a reply cut off at ``max_tokens`` before its call was complete; ``invalid``: calls the
    schema check refuses; ``undone``: a complete reply with no call and no answer text.
    Returns ``{"unreadable", "invalid", "undone", "calls", "leaked"}``.
    """
    from ...native import reply_calls
    from ...schema import decode_arguments

    calls, leaked, _ = reply_calls(reply, tools)
    cut = not calls and not leaked and reply.finish_reason == "length"
    refused = sum(
        call_problem(tools, c["function"]["name"], decode_arguments(c["function"]["arguments"]))
        is not None
        for c in calls
    )
    empty = not calls and not leaked and not cut and not (reply.content or "").strip()
    return {
        "unreadable": int(bool(leaked) or cut),
        "invalid": refused,
        "undone": int(empty),
        "calls": len(calls),
        "leaked": int(bool(leaked)),
    }


def measured(
    loop: Callable, task, model, tools: dict[str, Tool], exemplars=(), *, max_steps: int = MAX_STEPS
) -> dict:
    """Run the learner's ``loop`` on ``task``; count its steps' problems.

    ``loop`` is ``run_loop`` or ``run_native``. ``max_steps`` defaults to the evaluation's (and
    the ``migration-test`` file's) limit. Returns ``{"task", "loop", "answer", "right", "seconds",
    "steps", "unreadable", "invalid", "undone", "calls", "leaked"}``: the problems summed over
    the model's completions or replies, scored by :func:`react_lab.lab.experiments.tasks.score`;
    ``"loop"`` says whose loop ran: ``"your"``, or ``"the reference"`` standing in for it.
    """
    from ..experiments.tasks import score

    watched = Watched(model)
    t0 = time.perf_counter()
    answer, _ = loop(task.question, watched, tools, exemplars=exemplars, max_steps=max_steps)
    seconds = time.perf_counter() - t0
    total = Counter({"unreadable": 0, "invalid": 0, "undone": 0, "calls": 0, "leaked": 0})
    for said in watched.said:
        total.update(
            reply_problems(said, tools)
            if hasattr(said, "tool_calls")
            else completion_problems(said.text, tools)
        )
    return {
        "task": task.id,
        "loop": "the reference" if getattr(loop, "reference", None) else "your",
        "answer": answer,
        "right": score(answer, task),
        "seconds": round(seconds, 1),
        "steps": len(watched.said),
        **total,
    }


def problems_table(text: list[dict], native: list[dict], saved=None) -> str:
    """The learner's two loops side by side, and the saved file's two agents below.

    The loops are :func:`measured` runs.

    Columns: right answers of questions; ``unreadable`` and ``neither`` (undone) per model
    call; ``invalid`` per call made; seconds per question in this run. ``saved`` is the
    loaded ``migration-test`` results (its ``text`` and ``native`` arms), labelled.
    """

    def row(label, right, runs, p, seconds=""):
        def cell(k, of):
            return f"{p[k]}/{p[of]}"

        return (
            f"{label:<24}{right:>3}/{runs:<3}{cell('unreadable', 'steps'):>12}"
            f"{cell('invalid', 'calls'):>9}{cell('undone', 'steps'):>9}{seconds:>12}"
        )

    lines = [
        f"{'':<24}{'right':>7}{'unreadable':>12}{'invalid':>9}{'neither':>9}{'s/question':>12}"
    ]
    for name, runs in (("run_loop", text), ("run_native", native)):
        whose = {r.get("loop", "your") for r in runs}  # a reference standing in says so
        label = f"{'your' if whose == {'your'} else 'reference'} {name}"
        p = Counter()
        for r in runs:
            p.update({k: r[k] for k in ("unreadable", "invalid", "undone", "calls", "steps")})
        seconds = f"{sum(r['seconds'] for r in runs) / max(len(runs), 1):.1f}"
        lines.append(row(label, sum(r["right"] for r in runs), len(runs), p, seconds))
    if saved is not None:
        when = saved.describe().split(" computed ")[1].split(" in ")[0]
        lines.append(
            f"file {saved.name}: the lab's two agents, {saved.data['summary']['text']['runs']} "
            f"questions (computed {when}):"
        )
        for arm in ("text", "native"):
            s = saved.data["summary"][arm]
            p = {
                "unreadable": s["unreadable"]["count"],
                "invalid": s["invalid"]["count"],
                "undone": s["undone"]["count"],
                "steps": s["steps"],
                "calls": s["calls"],
            }
            lines.append(row(f"  {arm} agent", s["correct"], s["runs"], p))
    return "\n".join(lines)


def source_of(fn: Callable) -> list[str]:
    """The code of a piece of the learner's agent, line by line.

    No docstring, comments or blank lines.

    Their own piece as ``my_agent.py`` holds it; for a reference standing in (a piece with a
    ``reference`` attribute, :func:`react_lab.lab.notebook.agent_file.load_agent`), the
    reference's, named as the piece. Indentation is kept, so a diff shows the loop's shape.
    """
    from .agent_file import reference_source

    exercise = getattr(fn, "reference", None)
    source = reference_source(exercise) if exercise else inspect.getsource(fn)
    source = textwrap.dedent(source)
    lines = source.splitlines()
    cut: dict[int, int] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            cut[tok.start[0]] = tok.start[1]
    body = ast.parse(source).body[0].body
    doc = set()
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(getattr(body[0], "value", None), ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        doc = set(range(body[0].lineno, body[0].end_lineno + 1))
    kept = [
        (line[: cut[n]] if n in cut else line).rstrip()
        for n, line in enumerate(lines, 1)
        if n not in doc
    ]
    return [line + "\n" for line in kept if line.strip()]


# --------------------------------------------------------------------------- notebook 07's facade

from ...native import reply_calls  # noqa: E402  (re-exported for the learner's run_native)
from ...tools import default_tools  # noqa: E402
from ..backends.load import load_chat_model, load_model  # noqa: E402
from .minutes import show_minutes  # noqa: E402
from .native_turn import tool_messages  # noqa: E402
from .quiz import quiz  # noqa: E402

__all__ = [
    "text_agent",
    "native_agent",
    "agent_diff",
    "step_problems",
    "Watched",
    "measured",
    "problems_table",
    "source_of",
    "first_messages",
    "reply_calls",
    "tool_messages",
    "tool_schemas",
    "default_tools",
    "load_model",
    "load_chat_model",
    "show_minutes",
    "quiz",
    "ladder_table",
    "leaked_reply",
    "calls_in",
]


def ladder_table(*configs: str) -> str:
    """The ladder's files for ``configs`` on the test half, labelled.

    Each: right of n, seconds and prompt tokens per task.
    """
    from ..experiments.ladder import load_results

    rows = load_results([f"ladder-test-{c}" for c in configs])
    lines = [f"{'file':<28}{'right':>9}{'s/task':>8}{'prompt tokens/task':>20}   computed"]
    for r in rows:
        when = r["describe"].split(" computed ")[1].split(" in ")[0]
        lines.append(
            f"{r['name']:<28}{r['rate'].successes:>5}/{r['rate'].n:<3}{r['seconds']:>8.2f}"
            f"{r['prompt_tokens']:>20,.0f}   {when}"
        )
    return "\n".join(lines)


def leaked_reply(text: str):
    """A scripted chat reply whose call is written into its text, with ``tool_calls`` empty.

    As a server whose chat template does not parse the model's call format returns it.
    """
    from ..backends.chat import ChatReply

    return ChatReply(content=text, tool_calls=[], finish_reason="stop")


def calls_in(messages: list[dict]) -> list[str]:
    """The calls a native run made, as ``tool(arguments)``: the exemplars' left out."""
    return [
        f"{c['function']['name']}({c['function']['arguments']})"
        for m in messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
        if not str(c.get("id", "")).startswith("example_")
    ]
