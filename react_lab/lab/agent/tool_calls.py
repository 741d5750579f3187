"""The bench's native loop's bookkeeping: a turn's calls in its step, its notes, the transcript.

The messages a native run starts from and the calls a reply holds are the lesson's
(:mod:`react_lab.messages`, what notebook 07's ``run_native`` uses). Here, for
:func:`react_lab.lab.agent.native.run_native`: a turn's calls and results written into its
step (:func:`record_calls`), what the loop tells the model when a reply holds neither a call
nor an answer, and the conversation shown as an owner-marked transcript
(:func:`conversation`). ``tool_choice`` says whether the reply may, must or must not call, or
which tool it must call (the provider checks it: in the lab,
:func:`react_lab.lab.backends.grammar.check_tool_choice`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...messages import EXAMPLE_ID
from ...schema import decode_arguments
from ...tools import Observation
from .trace import Step, Transcript

# --------------------------------------------------------------------------- a turn


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
