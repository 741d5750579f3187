"""The three problems native tool calling is said to remove, counted on any loop (seed 003).

Seed 003: native calling removes parsing the action out of free text, syntactically invalid
arguments, and not knowing when the model is done (:data:`PROBLEMS`). They are counted from
what the model said, per model call, as the loop that asked read it: :class:`Watched` wraps a
model and keeps every completion or reply (and what the loop sent for it);
:func:`completion_problems` reads a text completion as the learner's ``run_loop`` reads it,
:func:`reply_problems` a chat reply as their ``run_native`` reads it, and :func:`counted`
gives both per model call and summed. One way of counting, shared: :func:`measured` runs one
of the learner's loops on a task (notebook 07), and the migration experiment runs the
reference agent's two loops (:func:`react_lab.agent.composed`) the same way
(:mod:`react_lab.lab.experiments.migration_runs`).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Callable

from ...protocol import unknown_tool_message
from ...schema import check_arguments
from ...tools import Tool

#: Model calls per run (the evaluation's limit, ``react-lab eval``) and completion tokens per
#: call: 128, what the learner's loops send (:func:`react_lab.agent.run_loop`).
MAX_STEPS, MAX_TOKENS = 4, 128


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


#: The three problems native tool calling removes (seed 003), as the counters read them.
PROBLEMS = {
    "unreadable": "parsing the action out of free text: a call the loop could not read "
    "(text: a line labelled Action that the anchored ACTION_RE does not read, a forged "
    "Observation line; native: a call leaked into the text, a reply cut off at max_tokens "
    "before its call was complete)",
    "invalid": "syntactically invalid arguments: a call refused by the schema check "
    "(an undeclared tool, or arguments its schema rejects)",
    "undone": "when is it done: a reply that was neither a call nor an answer, or ran on past "
    "its answer into another step (text: no Action or Answer line, or more text after the "
    "answer's line; native: a complete reply with no call and no answer text)",
}

_ACTION_LABEL = re.compile(
    r"^[ \t>*_#]*action\b[^\n:\uff1a]{0,20}[:\uff1a]", re.IGNORECASE | re.MULTILINE
)


# ------------------------------------------------------------------------------ counted per call


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
