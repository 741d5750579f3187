"""Native tool calling's messages: what a run starts from, and what it makes of a reply.

In the text protocol a regular expression in your client decides which characters are a tool
call (:data:`react_lab.protocol.ACTION_RE`). Native tool calling moves that decision: the
request carries every tool's JSON Schema, the reply carries its calls in ``tool_calls`` (the
OpenAI chat completions shape: ``id``, ``type: "function"``, ``function: {name, arguments}``
with ``arguments`` a JSON *string*), and each result goes back as a ``{"role": "tool",
"tool_call_id": ...}`` message. ``tool_choice`` says whether the reply may, must or must not
call, or which tool it must call (the provider checks it: in the lab,
:func:`react_lab.lab.backends.grammar.check_tool_choice`).

Here, for :func:`react_lab.native.run_native`: the messages a run starts from
(:func:`first_messages`; the text protocol's exemplar becomes a past exchange,
:func:`exemplar_messages`), the calls a reply holds (:func:`reply_calls`, a call leaked into
its text included), what the loop tells the model when a reply holds neither a call nor an
answer, and the conversation shown as an owner-marked transcript (:func:`conversation`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ._parsing.reasons import call_name_problem
from .parser import parse, read_reply
from .protocol import ACTION, Exemplar, unknown_tool_message
from .schema import check_arguments, decode_arguments
from .tools import Observation, Tool, declared
from .trace import Step, Transcript

#: The system message of a native run. No format rules, no exemplars: the tools travel as
#: schemas and the reply's shape is the provider's (or the grammar's) business.
SYSTEM = (
    "You answer questions about a billing system. Call the tools to look facts up; "
    "never guess ids, dates or amounts. When the tool results answer the question, "
    "give the answer."
)

#: How an exemplar's tool-call ids start (``example_1_1``): they mark where the prompt ends.
EXAMPLE_ID = "example_"

# --------------------------------------------------------------------------- the first messages


def exemplar_messages(exemplars: Sequence[Exemplar], tools: dict[str, Tool]) -> list[dict]:
    """The native twin of the text protocol's exemplars: each one a past exchange, as messages.

    For each :class:`react_lab.protocol.Exemplar`: its question as a ``user`` message;
    each step as an ``assistant`` message (the thought in ``content``, the action in
    ``tool_calls`` with the id ``example_<exemplar>_<step>``) followed by its
    observation as a ``tool`` message keyed to that id; then the final thought and
    answer as an ``assistant`` message. An action's arguments are named by the tool's
    schema (``list_invoices[cus_4417, 2026-07-01]`` becomes ``{"customer_id": "cus_4417",
    "since": "2026-07-01"}``). Raises ValueError for an action naming no tool in ``tools``.
    """
    messages: list[dict] = []
    for i, ex in enumerate(exemplars, 1):
        messages.append({"role": "user", "content": ex.question})
        for j, (thought, action, observation) in enumerate(ex.steps, 1):
            parsed = parse(f"{ACTION}: {action}", tools=list(tools))
            if parsed.kind != "action":
                raise ValueError(
                    f"exemplar {i}, step {j}: {action!r} is not a call of these tools "
                    f"({parsed.reason})"
                )
            args = parsed.args
            if not isinstance(args, dict):  # named by the schema's properties, in order
                args = dict(zip(tools[parsed.tool].parameters["properties"], args))
            function = {"name": parsed.tool, "arguments": json.dumps(args, ensure_ascii=False)}
            call = {"id": f"{EXAMPLE_ID}{i}_{j}", "type": "function", "function": function}
            messages += [
                {"role": "assistant", "content": thought, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": observation},
            ]
        messages.append({"role": "assistant", "content": ex.answer, "thought": ex.final_thought})
    return messages


def first_messages(
    question: str,
    tools: dict[str, Tool],
    *,
    system: str = SYSTEM,
    notes: Sequence[str] = (),
    exemplars: Sequence[Exemplar] = (),
) -> list[dict]:
    """The messages a native run starts from: the system turn, the exemplars, the question.

    The system turn is ``system`` and then ``notes``, one a line.
    """
    return [
        {"role": "system", "content": "\n".join([system, *notes])},
        *exemplar_messages(exemplars, tools),
        {"role": "user", "content": question},
    ]


# --------------------------------------------------------------------------- a reply


def reply_calls(reply, tools: dict[str, Tool]) -> tuple[list[dict], list[dict], str | None]:
    """The calls to run for a reply: ``(calls, leaked, problem)``.

    A reply's ``tool_calls`` run as they are. A reply without them whose text holds a
    tool call (:func:`react_lab._parsing.leaks.leaked_calls`: a ``<tool_call>`` block, a
    ``{"name", "arguments"}`` object, a list of them, fenced or not) is never taken as
    the answer: when every leaked call names a declared tool with valid arguments they
    run as if they had come in ``tool_calls`` -- the model meant them; a server whose chat
    template missed the format is not the model's error -- and the step is marked
    ``leaked``; otherwise nothing runs and ``problem`` is what the model is told
    (:func:`leak_message`). A call inside a reasoning block is a draft, not a call
    (:func:`react_lab.parser.read_reply`).
    """
    if reply.tool_calls:
        return [well_formed(call, i) for i, call in enumerate(reply.tool_calls, 1)], [], None
    leaks = read_reply(reply.content, declared(tools)).calls  # none from inside reasoning
    leaked = [leak.call for leak in leaks]
    problems = [leak.describe() for leak in leaks if leak.problem] + leak_problems(tools, leaked)
    if leaked and problems:
        return [], leaked, leak_message(leaked, problems)
    return leaked, leaked, None


def well_formed(call, number: int) -> dict:
    """A reply's ``number``-th tool call, as the loop needs it.

    It has an ``id`` (given one if the backend sent none) and a ``function`` naming its tool.
    Anything else is a ``TypeError`` naming the shape: a chat backend that writes calls
    another way is the backend's bug.
    """
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise TypeError(
            f"the reply's tool call {number} is {call!r:.80}; a chat backend returns each as "
            '{"id": "...", "type": "function", "function": {"name": "<a tool>", "arguments": '
            '"<JSON>"}}'
        )
    if call.get("id") is None:  # some servers send none: a tool message needs one to answer
        return {**call, "id": f"call_{number}"}
    return call


def leak_problems(tools: dict[str, Tool], calls: Sequence[dict]) -> list[str]:
    """Why leaked ``calls`` cannot run: an unknown tool or invalid arguments ([] if none)."""
    problems = []
    for call in calls:
        name = call["function"]["name"]
        tool = tools.get(name)
        if tool is None:  # the one tool-name rule, a channel's name, or an unknown tool
            problems.append(call_name_problem(name, tools) or unknown_tool_message(name, tools))
            continue
        problems += [
            f"{name}: {e}" for e in check_arguments(tool, call["function"]["arguments"])[1]
        ]
    return problems


def record_calls(step: Step, calls: Sequence[dict], observations: list[Observation]) -> None:
    """Write a turn's calls and results into its step: every call, every result, the first guard."""
    parsed = [
        {
            "id": c.get("id"),
            "tool": c["function"].get("name"),
            "args": decode_arguments(c["function"].get("arguments")),
        }
        for c in calls
    ]
    step.action = {"tool": parsed[0]["tool"], "args": parsed[0]["args"]}
    if len(parsed) > 1:
        step.action["calls"] = parsed
    step.observation = "\n".join(o.text for o in observations)
    errors = [o.error for o in observations if o.error]
    step.error = "\n".join(errors) if errors else None
    step.guard = next((o.guard for o in observations if o.guard), None)
    step.tool_seconds = sum(o.seconds for o in observations)


def leak_message(calls: Sequence[dict], problems: Sequence[str]) -> str:
    """What the loop tells the model when a call written in its text cannot run."""
    names = ", ".join(c["function"]["name"] for c in calls)
    return (
        f"the reply wrote a tool call ({names}) in its text, not in the tool-call field, "
        f"and it cannot run: {'; '.join(problems)}. Nothing was run; send each call in "
        "the tool_calls field, with a declared tool and valid arguments"
    )


def not_an_answer_message(saw: str | None) -> str:
    """What the loop tells the model when a reply's text is not an answer; ``saw``: what it is."""
    return (
        f"the reply's text is not an answer: it holds {saw or 'no answer'}. Nothing was run; "
        "send each call in the tool_calls field, or the answer as plain text"
    )


def malformed_reply_message(reply, max_tokens: int) -> str:
    """What the loop tells the model when a reply has neither tool calls nor an answer."""
    if reply.finish_reason == "length":
        return (
            f"the reply was cut off after {reply.completion_tokens} tokens (max_tokens="
            f"{max_tokens}) before it was complete; reply with a shorter thought"
        )
    return (
        'the reply had neither tool calls nor an answer; reply with {"thought": "...", '
        '"tool_calls": [{"name": "<a tool>", "arguments": {...}}]} or '
        '{"thought": "...", "answer": "..."}'
    )


# --------------------------------------------------------------------------- the transcript


def conversation(messages: Sequence[dict]) -> Transcript:
    """Show a message list as a :class:`Transcript`, one line per message, owned by who wrote it.

    The prompt is the system message, the exemplars (through the answer after the last
    ``example_`` tool result) and the question.
    """
    transcript = Transcript()
    examples = [
        i
        for i, m in enumerate(messages)
        if m["role"] == "tool" and str(m.get("tool_call_id", "")).startswith(EXAMPLE_ID)
    ]
    if examples:  # the exemplars end with an answer; the question follows it
        head = min(len(messages), examples[-1] + 3)
    else:  # the system message and the question
        head = 0
        while head < len(messages) and messages[head]["role"] in ("system", "user") and head < 2:
            head += 1
    lines = []
    for m in messages[:head]:
        role, content = m["role"], m.get("content")
        if role == "system":
            lines.append(f"system: {content}\n")
        elif role == "user":
            lines.append(f"Question: {content}\n")
        else:
            lines.append(
                f"example {role}: {assistant_json(m) if role == 'assistant' else content}\n"
            )
    transcript.add("prompt", "".join(lines))
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
    """An assistant message in the JSON reply form the lab's reply grammar produces.

    ``{"thought", "tool_calls": [{"name", "arguments"}]}``, or ``{"thought", "answer"}``.
    """
    calls = msg.get("tool_calls") or []
    if not calls:
        reply = {"thought": msg.get("thought") or "", "answer": msg.get("content") or ""}
        return json.dumps(reply, ensure_ascii=False)
    items = [
        {"name": c["function"]["name"], "arguments": decode_arguments(c["function"]["arguments"])}
        for c in calls
    ]
    return json.dumps(
        {"thought": msg.get("content") or "", "tool_calls": items}, ensure_ascii=False
    )
