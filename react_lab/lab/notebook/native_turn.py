"""What a native loop appends after a reply that is not the answer: notebook 07's helper.

The learner's ``run_native`` (notebook 07) writes the loop; :func:`tool_messages` carries
the bookkeeping of one turn, so the lines they write are the ones the migration changes:
the messages, the tool schemas, reading the calls, the answer.
"""

from __future__ import annotations

from ...schema import decode_arguments
from ...tool_calls import reply_calls
from ...tools import call_tool


def tool_messages(reply, tools) -> list[dict]:
    """The messages to append after ``reply`` when it is not the answer.

    The reply as an assistant message carrying its calls (a call that leaked into its
    text included: :func:`react_lab.tool_calls.reply_calls` reads it), then one ``tool``
    message per call, keyed to the call's id, holding what
    :func:`react_lab.tools.call_tool` returns. When a call written in the text cannot run
    (an unknown tool, invalid arguments), the loop's note instead, as a ``user`` message
    starting ``Error:``. Never raises.
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
