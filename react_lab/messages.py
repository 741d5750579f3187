"""Native tool calling's messages: the ones a run starts from, and the ones a reply adds.

In the text protocol a regular expression in your client decides which characters are a tool
call (:data:`react_lab.protocol.ACTION_RE`). Native tool calling moves that decision: the
request carries every tool's JSON Schema, the reply carries its calls in ``tool_calls`` (the
OpenAI chat completions shape: ``id``, ``type: "function"``, ``function: {name, arguments}``
with ``arguments`` a JSON *string*), and each result goes back as a ``{"role": "tool",
"tool_call_id": ...}`` message.

Notebook 07's ``run_native`` (:func:`react_lab.agent.run_native`) uses three of these: the
messages a run starts from (:func:`first_messages`; the text protocol's exemplar becomes a
past exchange, :func:`exemplar_messages`), the calls a reply holds (:func:`reply_calls`, a
call leaked into its text included), and the messages to append after a reply that is not the
answer (:func:`tool_messages`). The bench's native loop uses the same ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ._parsing.leaks import Leak, find_leaks
from ._parsing.reasoning import set_aside_reasoning
from ._parsing.reasons import call_name_problem
from ._parsing.tokens import decode_markers
from .protocol import ACTION, ACTION_RE, Exemplar, split_arguments, unknown_tool_message
from .schema import check_arguments, decode_arguments
from .tools import Tool, call_tool, declared

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
    "since": "2026-07-01"}``). Raises ValueError for an action that is not ``tool[args]``
    of a tool in ``tools``.
    """
    messages: list[dict] = []
    for i, ex in enumerate(exemplars, 1):
        messages.append({"role": "user", "content": ex.question})
        for j, (thought, action, observation) in enumerate(ex.steps, 1):
            match = ACTION_RE.fullmatch(f"{ACTION}: {action}")
            if match is None or match.group(1) not in tools:
                raise ValueError(
                    f"exemplar {i}, step {j}: {action!r} is not a call tool[arguments] of "
                    f"these tools ({', '.join(tools)})"
                )
            name, values = match.group(1), [a.strip() for a in split_arguments(match.group(2))]
            args = dict(zip(tools[name].parameters["properties"], values))  # named in order
            function = {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}
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
    tool call (:func:`written_calls`: a ``<tool_call>`` block, a ``{"name", "arguments"}``
    object, a list of them, fenced or not) is never taken as the answer: when every leaked
    call names a declared tool with valid arguments they run as if they had come in
    ``tool_calls`` -- the model meant them; a server whose chat template missed the format
    is not the model's error -- and the bench marks the step ``leaked``; otherwise nothing
    runs and ``problem`` is what the model is told (:func:`leak_message`).
    """
    if reply.tool_calls:
        return [well_formed(call, i) for i, call in enumerate(reply.tool_calls, 1)], [], None
    leaks = written_calls(reply.content, tools)
    leaked = [leak.call for leak in leaks]
    problems = [leak.describe() for leak in leaks if leak.problem] + leak_problems(tools, leaked)
    if leaked and problems:
        return [], leaked, leak_message(leaked, problems)
    return leaked, leaked, None


def written_calls(text: str | None, tools: dict[str, Tool]) -> list[Leak]:
    """The tool calls a reply's text holds, in markup or as JSON; none from inside reasoning.

    Reasoning (``<think>...</think>`` and the like) is set aside first: a call drafted there
    is a draft. Never raises: text that cannot be read holds no call.
    """
    if not isinstance(text, str):
        return []
    try:
        plain = set_aside_reasoning(decode_markers(text)[0])[0]
        return find_leaks(plain, declared(tools))
    except Exception:  # noqa: BLE001 -- reading model text must never take the loop down
        return []


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


def leak_message(calls: Sequence[dict], problems: Sequence[str]) -> str:
    """What the loop tells the model when a call written in its text cannot run."""
    names = ", ".join(c["function"]["name"] for c in calls)
    return (
        f"the reply wrote a tool call ({names}) in its text, not in the tool-call field, "
        f"and it cannot run: {'; '.join(problems)}. Nothing was run; send each call in "
        "the tool_calls field, with a declared tool and valid arguments"
    )


def tool_messages(reply, tools: dict[str, Tool]) -> list[dict]:
    """The messages to append after ``reply`` when it is not the answer.

    The reply as an assistant message carrying its calls (a call that leaked into its
    text included: :func:`reply_calls` reads it), then one ``tool`` message per call,
    keyed to the call's id, holding what :func:`react_lab.tools.call_tool` returns. When a
    call written in the text cannot run (an unknown tool, invalid arguments), the loop's
    note instead, as a ``user`` message starting ``Error:``. Never raises.
    """
    calls, _, problem = reply_calls(reply, tools)
    said = {**reply.message(), "tool_calls": calls} if calls else reply.message()
    if problem:
        return [said, {"role": "user", "content": f"Error: {problem}"}]
    return [said] + [
        {
            "role": "tool",
            "tool_call_id": call["id"],
            "content": call_tool(
                tools, call["function"]["name"], decode_arguments(call["function"]["arguments"])
            ).text,
        }
        for call in calls
    ]
