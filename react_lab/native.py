"""Native (structured) tool calling: calls arrive as JSON in a field of their own, checked by a schema.

In the text protocol a regular expression in your client decides which characters are a
tool call (:data:`react_lab.protocol.ACTION_RE`). Native tool calling moves that
decision: the request carries every tool's JSON Schema, the reply carries its calls in
``tool_calls`` (the OpenAI chat completions shape: ``id``, ``type: "function"``,
``function: {name, arguments}`` with ``arguments`` a JSON *string*), and each result goes
back as a ``{"role": "tool", "tool_call_id": ...}`` message.

:func:`run_native` is the loop: the same shape as :func:`react_lab.loop.run`, with a
schema check (:func:`react_lab.schema.validate_call`, inside :func:`execute_call`) where
the text loop has its parser. The backends it talks to are in :mod:`react_lab.backends.chat`;
the grammar that constrains the embedded model's replies is in :mod:`react_lab.backends.grammar`.
"""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ._checks import check_run_arguments
from .context import compact_messages
from .guards import BEST_EFFORT_AFTER, MORE, Guards
from .leaks import leaked_calls
from .loop import MAX_STEPS, best_effort_step, end_step
from .protocol import MAX_TOKENS, unknown_tool_message
from .schema import check_arguments, decode_arguments, example_args
from .tools import Observation, Tool, call_tool, tool_schemas
from .trace import RunResult, Step, Transcript

if TYPE_CHECKING:
    from .backends.chat import ChatReply

#: The system message of a native run. No format rules, no exemplars: the tools travel as
#: schemas and the reply's shape is the provider's (or the grammar's) business.
SYSTEM = ("You answer questions about a billing system. Call the tools to look facts up; "
          "never guess ids, dates or amounts. When the tool results answer the question, "
          "give the answer.")

#: What the loop tells the model when no more tool calls are allowed.
BEST_EFFORT_REQUEST = ("The loop allows no more tool calls ({guard}). Answer the question now "
                       "from the tool results above, as well as they allow.")


# --------------------------------------------------------------------------- running a call

def execute_call(tools: dict[str, Tool], call: dict) -> Observation:
    """Run one OpenAI-shaped tool call: look the tool up, check its arguments, run it. Never raises.

    Invalid arguments are refused *before* the tool runs, with
    :func:`react_lab.schema.check_arguments`' messages. No approval is asked here: the
    loop calls this through :meth:`react_lab.guards.Guards.run_tool`, which holds the
    approval gate for side-effecting tools (as the text loop's ``call_tool`` does).
    """
    name = call.get("function", {}).get("name")
    tool = tools.get(name)
    if tool is None:
        message = unknown_tool_message(str(name), tools)
        return Observation(f"Error: {message}", error=message)
    args, errors = check_arguments(tool, call["function"].get("arguments", "{}"))
    if errors:
        message = (f"{name} was not run; fix its arguments: " + "; ".join(errors)
                   + f"; a valid call: {name}({example_args(tool)})")
        return Observation(f"Error: {message}", error=message)
    return call_tool(tools, name, args)


def _run_guarded(guards: Guards, tools: dict[str, Tool], call: dict) -> Observation:
    """Run one OpenAI-shaped call through the guards; the schema check runs inside them.

    The guards see the decoded arguments (the raw string if they are not JSON), so a
    repeat is a repeat however the model spaced its JSON.
    """
    name = str(call.get("function", {}).get("name"))
    args = decode_arguments(call.get("function", {}).get("arguments", "{}"))
    if name == MORE:
        return guards.run_tool(tools, name, args if isinstance(args, dict) else {"page": args})
    return guards.run_tool(tools, name, args, call=lambda t, n, a: execute_call(t, call))


# --------------------------------------------------------------------------- the native loop

def run_native(question: str, model, tools: dict[str, Tool], *, max_steps: int = MAX_STEPS,
               max_tokens: int = MAX_TOKENS, system: str = SYSTEM,
               approve: Callable[[str, dict], bool] | None = None,
               messages: list[dict] | None = None, guards: Guards | None = None) -> Iterator[Step]:
    """Run the native tool-calling loop, yielding one :class:`Step` per model call.

    ``model`` is any chat backend with ``chat(messages, tools=, max_tokens=)``
    (:mod:`react_lab.backends.chat`). Pass a ``messages`` list to watch the conversation grow (it
    is filled in place). A step's ``action`` is ``{"tool", "args"}`` of its first call
    (plus ``"calls"``, all of them, when the reply made several); its ``observation`` is
    the results joined by newlines.

    The guards are the text loop's (:class:`react_lab.guards.Guards`; default: every limit
    on), called at the same places: token and money budgets after each reply; each call
    checked against its schema and then run *through the guards* (repeats, retry cap,
    approval, timeout, truncation with a ``more`` tool offered from the first step, data
    markers), one call at a time in the order the model wrote them, since the guards keep
    count; answer checks on a text reply (a rejected answer goes back as a user message);
    old tool results compacted past ``guards.compact_at`` tokens. ``approve``, when given,
    replaces ``guards.approve``. A step's ``guard`` names the guard that acted; when the
    step limit or a refusal guard ends the run and ``guards.best_effort`` is on, one more
    request, tool calls not allowed, asks for an answer, labelled ``[best effort]``.

    Leaked calls: a reply with no ``tool_calls`` whose text holds a tool call
    (:func:`react_lab.leaks.leaked_calls`: a ``<tool_call>`` block, a ``{"name",
    "arguments"}`` or ``{"tool_name", "tool_input"}`` object, a list of them, fenced or
    not) is never taken as the answer. When every call names a declared tool with valid
    arguments the loop runs them as if they had come in ``tool_calls`` -- the model meant
    them; a server whose chat template missed the format is not the model's error -- and
    marks the step ``leaked``. Otherwise nothing runs, and an error observation tells the
    model to send its calls in the tool-call field (:func:`leak_message`).
    """
    check_run_arguments("chat", model, tools, max_steps, max_tokens)
    guards = guards if guards is not None else Guards()
    if approve is not None:
        guards.approve = approve
    guards.start(question)
    messages = messages if messages is not None else []
    if not messages:
        notes = guards.notes()  # guard: prompt notes (data markers, citations)
        messages += [{"role": "system", "content": "\n".join([system, *notes])},
                     {"role": "user", "content": question}]
    loop_said: list[str] = []  # the loop's own words to the model: its notes and error results
    # guard: more[page]. Offered from the first step whenever long observations are paged,
    # so the tool list (written into the system turn) never changes and the model's cached
    # prompt prefix stays valid; called with no page waiting, it returns an error.
    offered = {**tools, MORE: guards.more_tool()} if guards.observation_chars else tools
    schemas = tool_schemas(offered)
    for number in range(1, max_steps + 1):
        t0 = time.perf_counter()
        reply = model.chat(messages, tools=schemas, max_tokens=max_tokens)
        guards.spend(reply)  # guard: token and money budgets
        # A call written in the text instead of the tool-call field is never the answer:
        # it runs when it is valid (the step is marked leaked), else the model is told.
        leaked = [] if reply.tool_calls else leaked_calls(reply.content)
        problems = leak_problems(offered, leaked)
        calls = reply.tool_calls or (leaked if not problems else [])
        message = reply.message()
        if leaked and calls:
            message["tool_calls"] = calls  # the conversation shows the calls the loop ran
        messages.append(message)
        step = Step.of(number, reply, thought=reply.thought, leaked=bool(leaked))
        if calls:  # each call runs through the guards, its schema checked inside them
            observations = [_run_guarded(guards, offered, c) for c in calls]  # guard: calls
            for call, obs in zip(calls, observations):
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": obs.text})
            _record_calls(step, calls, observations)
            loop_said += [obs.text for obs in observations if obs.error]
        elif leaked:  # a leaked call that cannot run: nothing runs, the model is told why
            step.error = leak_message(leaked, problems)
            step.observation = f"Error: {step.error}"
            messages.append({"role": "user", "content": step.observation})
            loop_said.append(step.observation)
        elif reply.content is not None:
            rejected = guards.check_answer(reply.content)  # guard: grounding, placeholders, citations
            if rejected is None:
                step.answer = reply.content
            else:  # the rejection goes back as a user message
                step.record(rejected)
                messages.append({"role": "user", "content": rejected.text})
                loop_said.append(rejected.text)
        else:
            step.error = step.observation = malformed_reply_message(reply, max_tokens)
            messages.append({"role": "user", "content": step.error})
            loop_said.append(step.error)
        if step.answer is None and compact_messages(messages, guards):  # guard: context size
            step.guard = step.guard or "compacted"
        ended = end_step(step, guards, number == max_steps, t0)  # guard: budgets, ignored refusals, step limit
        yield step
        if ended:
            if guards.best_effort and ended in BEST_EFFORT_AFTER:  # guard: step limit, best effort
                yield ask_best_effort_native(model, messages, guards, ended, number + 1, max_tokens,
                                             loop_said, tools=schemas)
            return


def _record_calls(step: Step, calls: Sequence[dict], observations: list[Observation]) -> None:
    """Write a turn's calls and results into its step: every call, every result, the first guard."""
    parsed = [{"id": c.get("id"), "tool": c["function"].get("name"),
               "args": decode_arguments(c["function"].get("arguments"))} for c in calls]
    step.action = {"tool": parsed[0]["tool"], "args": parsed[0]["args"]}
    if len(parsed) > 1:
        step.action["calls"] = parsed
    step.observation = "\n".join(o.text for o in observations)
    errors = [o.error for o in observations if o.error]
    step.error = "\n".join(errors) if errors else None
    step.guard = next((o.guard for o in observations if o.guard), None)
    step.tool_seconds = sum(o.seconds for o in observations)


def leak_problems(tools: dict[str, Tool], calls: Sequence[dict]) -> list[str]:
    """Why leaked ``calls`` cannot run: an unknown tool or invalid arguments, one message each ([] if none)."""
    problems = []
    for call in calls:
        name = call["function"]["name"]
        tool = tools.get(name)
        if tool is None:
            problems.append(unknown_tool_message(name, tools))
            continue
        problems += [f"{name}: {e}" for e in check_arguments(tool, call["function"]["arguments"])[1]]
    return problems


def leak_message(calls: Sequence[dict], problems: Sequence[str]) -> str:
    """What the loop tells the model when a call written in its text cannot run."""
    names = ", ".join(c["function"]["name"] for c in calls)
    return (f"the reply wrote a tool call ({names}) in its text, not in the tool-call field, "
            f"and it cannot run: {'; '.join(problems)}. Nothing was run; send each call in "
            "the tool_calls field, with a declared tool and valid arguments")


def malformed_reply_message(reply: "ChatReply", max_tokens: int) -> str:
    """What the loop tells the model when a reply has neither tool calls nor an answer."""
    if reply.finish_reason == "length":
        return (f"the reply was cut off after {reply.completion_tokens} tokens (max_tokens="
                f"{max_tokens}) before it was complete; reply with a shorter thought")
    return ('the reply had neither tool calls nor an answer; reply with {"thought": "...", '
            '"tool_calls": [{"name": "<a tool>", "arguments": {...}}]} or '
            '{"thought": "...", "answer": "..."}')


def ask_best_effort_native(model, messages: list[dict], guards: Guards, guard: str, number: int,
                           max_tokens: int, loop_said: Sequence[str] = (), *,
                           tools: Sequence[dict] = ()) -> Step:
    """Ask once, with tool calls not allowed (``tool_choice="none"``), for an answer from what the run found.

    ``tools`` are the schemas the run's steps offered: sent again with ``tool_choice="none"``
    (as the OpenAI API takes them), the request keeps the steps' system turn, so a local
    model reuses its cached prompt instead of evaluating the whole conversation again.
    The answer is labelled ``[best effort]``; a reply that still holds no answer (or
    only repeats the loop's own words: ``loop_said`` and this request) leaves the step's
    ``answer`` None and says so in ``error``. The step's ``guard`` is the limit that
    ended the run.
    """
    t0 = time.perf_counter()
    request = BEST_EFFORT_REQUEST.format(guard=guard)
    messages.append({"role": "user", "content": request})
    reply = model.chat(messages, tools=list(tools), max_tokens=max_tokens, tool_choice="none")
    guards.spend(reply)
    messages.append(reply.message())
    answer = (guards.best_effort_answer(reply.content, loop_said=[*loop_said, request])
              if reply.content and not reply.tool_calls else None)
    return best_effort_step(number, reply, guard, answer, t0, thought=reply.thought)


def ask_native(question: str, model, tools: dict[str, Tool], **kwargs) -> RunResult:
    """Run :func:`run_native` to the end; return a :class:`react_lab.trace.RunResult`.

    The result's transcript shows the conversation by owner: system and user messages
    as ``prompt``, assistant replies as ``model``, tool results as ``loop``.
    """
    messages: list[dict] = []
    steps = list(run_native(question, model, tools, messages=messages, **kwargs))
    return RunResult.from_steps(question, steps, conversation(messages))


def conversation(messages: Sequence[dict]) -> Transcript:
    """Show a message list as a :class:`Transcript`, one line per message, owned by who wrote it."""
    transcript = Transcript()
    head = 0  # the system message and the question form the prompt
    while head < len(messages) and messages[head]["role"] in ("system", "user") and head < 2:
        head += 1
    transcript.add("prompt", "".join(
        f"{'system' if m['role'] == 'system' else 'Question'}: {m.get('content')}\n"
        for m in messages[:head]))
    for msg in messages[head:]:
        role, content = msg["role"], msg.get("content")
        if role == "assistant":
            transcript.add("model", f"assistant: {assistant_json(msg)}\n")
        elif role == "tool":
            transcript.add("loop", f"tool[{msg.get('tool_call_id')}]: {content}\n")
        else:  # later user messages are the loop's notes to the model
            transcript.add("loop", f"{role}: {content}\n")
    return transcript


def assistant_json(msg: dict) -> str:
    """Render an assistant message back into the JSON reply form the grammar produces."""
    calls = msg.get("tool_calls") or []
    if not calls:
        return json.dumps({"thought": msg.get("thought") or "", "answer": msg.get("content") or ""},
                          ensure_ascii=False)
    items = [{"name": c["function"]["name"], "arguments": decode_arguments(c["function"]["arguments"])}
             for c in calls]
    return json.dumps({"thought": msg.get("content") or "", "tool_calls": items},
                      ensure_ascii=False)
