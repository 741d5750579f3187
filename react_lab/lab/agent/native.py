"""The native tool-calling loop: the text loop's shape, a schema check where its parser was.

:func:`run_native` sends the conversation and every tool's JSON Schema, runs the calls the reply
holds (:func:`react_lab.messages.reply_calls`) and sends each result back as a tool message, until
the reply is an answer or a guard ends the run; the guards are the text loop's, at the same places,
each one marked ``# guard:``. A call runs through :func:`execute_call`: the tool looked up, its
arguments checked against its schema (:func:`react_lab.schema.validate_call`), then run. A reply may
hold several calls: :func:`run_calls` runs them one at a time, in call order. The messages the loop
starts from and what it makes of a reply are in :mod:`react_lab.lab.agent.tool_calls`. The chat
backends it talks to are in :mod:`react_lab.lab.backends.chat`; the lab's runner of a reply's
read-only calls side by side in :mod:`react_lab.lab.parallel_calls`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from ...messages import SYSTEM, first_messages, reply_calls
from ...protocol import MAX_TOKENS, Exemplar, unknown_tool_message
from ...schema import check_arguments, decode_arguments, example_args
from ...tools import Observation, Tool, call_tool, declared, tool_schemas
from .checks import check_reply, check_run_arguments
from .context import compact_messages
from .guards import BUDGETS, Guards, Watch
from .loop import MAX_STEPS, best_effort_step, end_step
from .parser import read_reply
from .tool_calls import (
    conversation,
    malformed_reply_message,
    not_an_answer_message,
    record_calls,
)
from .trace import RunResult, Step

#: What the loop tells the model when no more tool calls are allowed.
BEST_EFFORT_REQUEST = (
    "The loop allows no more tool calls ({guard}). Answer the question now "
    "from the tool results above, as well as they allow."
)


# --------------------------------------------------------------------------- running calls


def execute_call(tools: dict[str, Tool], call: dict, *, approved: bool = False) -> Observation:
    """Run one OpenAI-shaped call: look the tool up, check its arguments, run it. Never raises.

    Invalid arguments are refused *before* the tool runs, with
    :func:`react_lab.schema.check_arguments`' messages. No approval is asked here: the loop
    calls this through :meth:`react_lab.lab.agent.guards.Watch.run_tool` (:func:`run_call`), which
    holds the approval gate and passes ``approved`` (a side-effecting tool runs only then).
    """
    name = call.get("function", {}).get("name")
    tool = tools.get(name)
    if tool is None:
        return Observation.failure(unknown_tool_message(str(name), tools))
    args, errors = check_arguments(tool, call["function"].get("arguments", "{}"))
    if errors:
        return Observation.failure(
            f"{name} was not run; fix its arguments: "
            + "; ".join(errors)
            + f"; a valid call: {name}({example_args(tool)})"
        )
    return call_tool(tools, name, args, approved=approved)


def run_call(
    watch: Watch, tools: dict[str, Tool], call: dict, run: Callable = execute_call
) -> Observation:
    """Run one OpenAI-shaped call through the guards, ``run(tools, call)`` if they let it through.

    The guards see the decoded arguments (the raw string if they are not JSON), so a repeat
    is a repeat however the model spaced its JSON.
    """
    function = call.get("function", {})
    args = decode_arguments(function.get("arguments", "{}"))
    name = str(function.get("name"))
    return watch.run_tool(tools, name, args, call=lambda t, n, a, **gate: run(t, call, **gate))


def run_calls(watch: Watch, tools: dict[str, Tool], calls: Sequence[dict]) -> list[Observation]:
    """Run one reply's calls through the run's ``watch``, one at a time, in call order.

    So a call written after another sees what it did, and each side-effecting call passes
    the approval gate before it runs. The lab's runner
    (:func:`react_lab.lab.parallel_calls.run_parallel_calls`) starts consecutive read-only
    calls side by side; the guards still take them in call order, so the observations are
    these.
    """
    return [run_call(watch, tools, call) for call in calls]


# --------------------------------------------------------------------------- the native loop


def run_native(
    question: str,
    model,
    tools: dict[str, Tool],
    *,
    max_steps: int = MAX_STEPS,
    max_tokens: int = MAX_TOKENS,
    system: str = SYSTEM,
    approve: Callable[[str, dict], bool] | None = None,
    messages: list[dict] | None = None,
    guards: Guards | None = None,
    tool_choice: str | dict = "auto",
    exemplars: Sequence[Exemplar] = (),
    run_calls: Callable[[Watch, dict, Sequence[dict]], list[Observation]] = run_calls,
) -> Iterator[Step]:
    """Run the native tool-calling loop, yielding one :class:`Step` per model call.

    ``model`` is any chat backend with ``chat(messages, tools=, max_tokens=, tool_choice=)``
    (:mod:`react_lab.lab.backends.chat`). Pass a ``messages`` list to watch the conversation
    grow (it is filled in place). ``exemplars`` (:class:`react_lab.protocol.Exemplar`) are
    prepended as past exchanges (:func:`react_lab.messages.exemplar_messages`).
    ``tool_choice`` is sent until a call has run, then ``"auto"``, so a forced call cannot
    loop; the backend refuses one it cannot take, as a provider does
    (:func:`react_lab.lab.backends.grammar.check_tool_choice`). A step's ``action`` is
    ``{"tool", "args"}`` of its first call (plus ``"calls"``, all of them, when the reply
    made several); its ``observation`` is the results joined by newlines.

    The guards are the text loop's (:class:`react_lab.lab.agent.guards.Guards`; default: every limit
    on), at the same places. ``run_calls`` runs a reply's calls through them (default
    :func:`run_calls`: one at a time, in call order; the lab passes a runner that starts the
    read-only ones side by side, with the same observations). A rejected answer, a cut-off
    reply or a leaked call that cannot run (:func:`react_lab.messages.reply_calls`) goes
    back as a user message. A reply's text is read as the text parser reads it
    (:func:`react_lab.lab.agent.parser.read_reply`): reasoning (``<think>...</think>``, Harmony's
    analysis channel) is set aside into the step's ``reasoning`` and never runs or answers;
    Harmony's final channel is the answer; text that holds call markup or special tokens but
    no call is never the answer: the model is told what it wrote.
    ``approve``, when given, replaces ``guards.approve`` for this run (the caller's guards
    are not changed). When the step limit or a refusal guard ends the run and
    ``guards.best_effort`` is on, one more request with ``tool_choice="none"`` asks for an
    answer, labelled ``[best effort]``.
    """
    check_run_arguments("chat", question, model, tools, max_steps, max_tokens, guards, exemplars)
    if not isinstance(system, str) or not isinstance(messages, (list, type(None))):
        raise TypeError("system must be a string and messages a list of chat messages, or None")
    if messages and any(not isinstance(m, dict) or "role" not in m for m in messages):
        raise TypeError("each of messages must be a chat message: {'role': ..., 'content': ...}")
    guards = guards if guards is not None else Guards()
    if approve is not None:
        guards = replace(guards, approve=approve)
    watch = guards.start(question)  # guard: this run's counters and clock start
    offered = guards.offered_tools(tools)  # guard: tools a guard adds, offered from the first step
    schemas = tool_schemas(offered)
    messages = messages if messages is not None else []
    if not messages:  # guard: prompt notes (data markers, citations) in the system turn
        messages += first_messages(
            question, offered, system=system, notes=guards.notes(), exemplars=exemplars
        )
    loop_said: list[str] = []  # the loop's own words to the model: its notes and error results
    for number in range(1, max_steps + 1):
        t0 = time.perf_counter()
        reply = model.chat(messages, tools=schemas, max_tokens=max_tokens, tool_choice=tool_choice)
        check_reply(reply, model, "chat")  # a bare string is no reply
        watch.spend(reply)  # guard: token and money budgets
        # A call written in the text is never the answer: it runs, or the model is told why not.
        calls, leaked, problem = reply_calls(reply, offered)
        messages.append({**reply.message(), **({"tool_calls": calls} if calls else {})})
        text = read_reply(reply.content, declared(offered)) if not reply.tool_calls else None
        reasoning = text.reasoning if text else None
        step = Step.of(
            number, reply, thought=reply.thought, leaked=bool(leaked), reasoning=reasoning
        )
        if calls:  # each call through the guards, its result a tool message keyed to its id
            observations = run_calls(watch, offered, calls)  # guard: refusals, approval, size
            for call, observation in zip(calls, observations):
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": observation.text}
                )
            record_calls(step, calls, observations)
            loop_said += [o.text for o in observations if o.error]
            tool_choice = "auto"  # a forced choice holds until a call has run
        elif reply.content is not None and not leaked and text.answer is None:  # markup, no answer
            step.error = not_an_answer_message(text.saw)
            step.observation = f"Error: {step.error}"
        elif reply.content is not None and not leaked:
            rejected = watch.check_answer(text.answer)  # guard: answer checks (grounding)
            if rejected is None:
                step.answer = text.answer
            else:
                step.record(rejected)
        else:  # no call ran and no answer: a leaked call that cannot run, a cut-off reply
            step.error = problem or malformed_reply_message(reply, max_tokens)
            step.observation = f"Error: {step.error}" if problem else step.error
        if not calls and step.observation:  # what the loop refused goes back as a user message
            messages.append({"role": "user", "content": step.observation})
            loop_said.append(step.observation)
        if step.answer is None and compact_messages(messages, guards):  # guard: context size
            step.guard = step.guard or "compacted"
        # "answer", the name of the guard that ends the run, or None to go on:
        ended = end_step(step, watch, number == max_steps, t0)  # guard: budgets, refusals, steps
        yield step
        if ended:
            if ended not in ("answer", *BUDGETS) and guards.best_effort:  # guard: best effort
                yield ask_best_effort_native(
                    model, messages, watch, ended, number + 1, max_tokens, loop_said, tools=schemas
                )
            return


def ask_best_effort_native(
    model,
    messages: list[dict],
    watch: Watch,
    guard: str,
    number: int,
    max_tokens: int,
    loop_said: Sequence[str] = (),
    *,
    tools: Sequence[dict] = (),
) -> Step:
    """Ask once more, tool calls not allowed (``tool_choice="none"``), for an answer.

    ``tools`` are the schemas the run's steps offered: sent again with ``tool_choice="none"``
    (as the OpenAI API takes them), the request keeps the steps' system turn, so a local
    model reuses its cached prompt instead of evaluating the whole conversation again.
    The answer is labelled ``[best effort]``; a reply that still holds no answer (or
    only repeats the loop's own words: ``loop_said`` and this request) leaves the step's
    ``answer`` None and says so in ``error``. The reply's text is read as the steps' is
    (:func:`react_lab.lab.agent.parser.read_reply`): a call written in it, or markup, is no answer,
    and the error says what it was ("a Mistral tool call to create_file, a tool this agent does not
    have"); Harmony's final channel is the answer. The step's ``guard`` is the limit that ended the
    run.
    """
    t0 = time.perf_counter()
    request = BEST_EFFORT_REQUEST.format(guard=guard)
    messages.append({"role": "user", "content": request})
    reply = model.chat(messages, tools=list(tools), max_tokens=max_tokens, tool_choice="none")
    check_reply(reply, model, "chat")
    watch.spend(reply)
    messages.append(reply.message())
    names = {  # each tool's declared parameters, as declared() gives them
        t["function"]["name"]: dict(t["function"].get("parameters", {}).get("properties", {}))
        for t in tools
        if isinstance(t, dict) and "function" in t
    }
    text = read_reply(reply.content, names) if reply.content and not reply.tool_calls else None
    answer = None
    if text is not None and text.answer:
        answer = watch.best_effort_answer(text.answer, loop_said=[*loop_said, request])
    saw = (
        "tool calls, which are not allowed now" if reply.tool_calls else text.saw if text else None
    )
    reasoning = text.reasoning if text else None
    return best_effort_step(
        number, reply, guard, answer, t0, thought=reply.thought, saw=saw, reasoning=reasoning
    )


def ask_native(
    question: str,
    model,
    tools: dict[str, Tool],
    *,
    messages: list[dict] | None = None,
    **kwargs,
) -> RunResult:
    """Run :func:`run_native` to the end; return a :class:`react_lab.lab.agent.trace.RunResult`.

    The result's transcript shows the conversation by owner: system and user messages
    as ``prompt``, assistant replies as ``model``, tool results as ``loop``.
    """
    messages = messages if messages is not None else []
    steps = list(run_native(question, model, tools, messages=messages, **kwargs))
    return RunResult.from_steps(question, steps, conversation(messages))
