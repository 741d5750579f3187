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
questions is :mod:`react_lab.lab.experiments.migration_runs`.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Callable

from ..._parsing.leaks import leaked_calls
from ...messages import first_messages
from ...protocol import OBSERVATION, STOP, THOUGHT, build_prompt, unknown_tool_message
from ...schema import check_arguments
from ...tools import Observation, Tool, tool_schemas
from ..agent.loop import end_step
from ..agent.parser import parse
from ..agent.tool_calls import conversation, malformed_reply_message, record_calls
from ..agent.trace import RunResult, Step, Transcript
from ..guards import LabGuards, LabWatch, offered_tools

#: Model calls per run and completion tokens per call: the evaluation's limits (``react-lab eval``).
MAX_STEPS, MAX_TOKENS = 4, 128


class Guards:
    """The guards as the two agents hold them: the lab's settings and the run in progress.

    The agents keep the spelling their code was written in, one object whose ``start`` begins a
    run, because the shipped migration results fingerprint their code lines
    (:func:`react_lab.lab.experiments.migration_runs.fingerprint_inputs`). ``Guards(**limits)``
    holds a :class:`react_lab.lab.guards.LabGuards` with those limits (:meth:`off`: every guard
    off); :meth:`start` begins a run's :class:`react_lab.lab.guards.LabWatch`, and the checks
    the agents call (``spend``, ``run_tool``, ``stop_reason``) are that run's.
    """

    def __init__(self, settings: LabGuards | None = None, **limits):
        self.settings = settings if settings is not None else LabGuards(**limits)
        self.watch: LabWatch = self.settings.start()

    @classmethod
    def off(cls, **overrides) -> "Guards":
        """Every guard switched off (:meth:`react_lab.lab.agent.guards.Guards.off`)."""
        return cls(LabGuards.off(**overrides))

    def start(self, question: str = "", exemplars=()) -> None:
        """Begin a run of ``question``: its counters, clock and pages start empty."""
        self.watch = self.settings.start(question, exemplars)

    def offered_tools(self, tools: dict[str, Tool]) -> dict[str, Tool]:
        """The tools the agents offer (``more`` with them while observations are paged)."""
        return self.settings.offered_tools(tools)

    def spend(self, completion) -> None:
        """The run's :meth:`react_lab.lab.agent.guards.Watch.spend`."""
        self.watch.spend(completion)

    def run_tool(self, tools: dict[str, Tool], name: str, args, **options) -> Observation:
        """The run's :meth:`react_lab.lab.agent.guards.Watch.run_tool`."""
        return self.watch.run_tool(tools, name, args, **options)

    def stop_reason(self) -> str | None:
        """The run's :meth:`react_lab.lab.agent.guards.Watch.stop_reason`."""
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
    :func:`react_lab.lab.agent.parser.parse`, as the agent read it. Raises ValueError for another
    protocol.
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
    """A model that keeps what it said, in ``said``, and what it was asked, in ``asked``.

    Every completion (text) or reply (chat), in order; ``asked[i]`` is the prompt (text) or a
    copy of the messages (chat) that ``said[i]`` answered.

    Wraps a text backend (``complete``) or a chat backend (``chat``) and passes every call
    through unchanged, so the learner's loops run as they do on the model itself; their
    steps are counted afterwards (:func:`counted`).
    """

    def __init__(self, model):
        self.model, self.said, self.asked = model, [], []

    def complete(self, prompt, **options):
        completion = self.model.complete(prompt, **options)
        self.said.append(completion)
        self.asked.append(prompt)
        return completion

    def chat(self, messages, **options):
        reply = self.model.chat(messages, **options)
        self.said.append(reply)
        self.asked.append(list(messages))  # the loop may extend its list in place
        return reply

    def __getattr__(self, name):
        return getattr(self.model, name)


def completion_problems(text: str, tools: dict[str, Tool]) -> dict[str, int]:
    """The three problems in one completion, as the learner's text loop reads it.

    The loop reads an answer with ``ANSWER_RE`` first, then a call with ``ACTION_RE``.
    ``unreadable``: a line labelled Action that the anchored regex does not read, or a
    forged ``Observation`` line; ``invalid``: a call the schema check refuses (an undeclared
    tool, arguments its schema rejects: :func:`call_problem`); ``undone``: neither a call nor
    an answer, or text after the answer's line (the model went on into another step).
    Returns ``{"unreadable", "invalid", "undone", "calls"}`` (0 or 1 each).
    """
    from ...protocol import ACTION_RE, ANSWER_RE

    answer = ANSWER_RE.search(text)  # the loop's rule: an answer ends the run
    match = None if answer else ACTION_RE.search(text)
    forged = re.search(r"^Observation", text, re.MULTILINE) is not None
    attempted = _ACTION_LABEL.search(text) is not None
    invalid = 0
    if match:
        name, args = match.group(1), [a.strip() for a in match.group(2).split(",")]
        invalid = int(call_problem(tools, name, named_args(tools, name, args)) is not None)
    # the loop keeps the answer's line; the rest is another step
    ran_on = answer is not None and bool(text[answer.end() :].strip())
    return {
        "unreadable": int(forged or (attempted and not match and not answer)),
        "invalid": invalid,
        "undone": int(ran_on or (not answer and not attempted and not forged)),
        "calls": int(bool(match)),
    }


def reply_problems(reply, tools: dict[str, Tool]) -> dict[str, int]:
    """The three problems in one chat reply, as the learner's native loop reads it.

    The loop reads it with ``reply_calls``.

    ``unreadable``: a call that leaked into the text (only the call-markup reader finds it),
    or a reply cut off at ``max_tokens`` before its call was complete; ``invalid``: calls the
    schema check refuses; ``undone``: a complete reply with no call and no answer text.
    Returns ``{"unreadable", "invalid", "undone", "calls", "leaked"}``.
    """
    from ...messages import reply_calls
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


def said_problems(said, asked, tools: dict[str, Tool]) -> dict[str, int]:
    """The three problems in one model call: a chat reply or a text completion.

    ``asked`` is what the loop sent for it (:attr:`Watched.asked`). A prompt that ends with
    ``Answer:`` asked for the answer itself -- the learner's best effort after the last step --
    and the loop takes the completion's first line as the answer, so it is read as one.
    """
    if hasattr(said, "tool_calls"):
        return reply_problems(said, tools)
    text = said.text
    if isinstance(asked, str) and asked.rstrip().endswith("Answer:"):
        text = "Answer: " + text.lstrip()
    return completion_problems(text, tools)


def counted(watched: Watched, tools: dict[str, Tool]) -> tuple[list[dict], dict[str, int]]:
    """The three problems in every model call of a :class:`Watched` run: per call, and summed.

    Returns ``(per_call, total)``: :func:`said_problems` of each call, in order, and their sum
    ``{"unreadable", "invalid", "undone", "calls", "leaked", "steps"}`` (``steps``: the model
    calls made).
    """
    per_call = [said_problems(s, a, tools) for s, a in zip(watched.said, watched.asked)]
    total = Counter(dict.fromkeys(("unreadable", "invalid", "undone", "calls", "leaked"), 0))
    for problems in per_call:
        total.update(problems)
    return per_call, {**total, "steps": len(per_call)}


def measured(
    loop: Callable, task, model, tools: dict[str, Tool], exemplars=(), *, max_steps: int = MAX_STEPS
) -> dict:
    """Run the learner's ``loop`` on ``task``; count its steps' problems.

    ``loop`` is ``run_loop`` or ``run_native``. ``max_steps`` defaults to the evaluation's (and
    the ``migration-test`` file's) limit. Returns ``{"task", "loop", "answer", "right", "seconds",
    "steps", "unreadable", "invalid", "undone", "calls", "leaked"}``: the problems summed over
    the model's completions or replies (:func:`counted`), scored by
    :func:`react_lab.lab.experiments.tasks.score`; ``"loop"`` says whose loop ran: ``"your"``,
    or ``"the reference"`` standing in for it.
    """
    from .tasks import score

    watched = Watched(model)
    t0 = time.perf_counter()
    answer, _ = loop(task.question, watched, tools, exemplars=exemplars, max_steps=max_steps)
    seconds = time.perf_counter() - t0
    return {
        "task": task.id,
        "loop": "the reference" if getattr(loop, "reference", None) else "your",
        "answer": answer,
        "right": score(answer, task),
        "seconds": round(seconds, 1),
        **counted(watched, tools)[1],
    }
