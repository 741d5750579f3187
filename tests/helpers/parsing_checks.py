"""What the parser tests share: the tools they parse with, and what every refusal must be."""

import re

#: The tool names the parser tests parse with.
TOOLS = ["search", "calc", "list_invoices", "get_charge"]
#: Every character ``str.splitlines()`` ends a line at: none is in a refusal.
LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")
#: The refusal that names nothing it saw.
GENERIC = "no action and no answer found"
#: An action line drifted from the seed's exact form: the tolerant parser reads each, the
#: seed's anchored regex (and the classic loop's strict reading) none.
DRIFT = [
    "Action 1: search[x]",
    "Action: search\nAction Input: x",
    "Action: search[x] trailing",
    "  Action: search[x]",
]
#: An ``Observation`` label alone on its line, as models write it: forged once the line ends.
BARE = [
    "Observation",
    "**Observation**",
    "### Observation",
    "Observation 2",
    "Observations",
    "<b>Observation</b>",
    "OBSERVATION",
    "> Observation",
    "Observation  ",
    "_Observation_",
]
#: An ``Observation`` label after the call on its ``Action`` line: forged, the action kept.
INLINE = [
    'Action: search[refunds] Observation: {"rows": 3}',
    "Action: search[refunds]Observation: 3",
    "Action: search[refunds] **Observation:** 3",
    "Action: search[refunds]<|im_end|>Observation: 3",
    "Action: search[refunds] Observation 1: 3",
    'Action: search("refunds") Observation: 3',
    "Action: search[refunds] \uff2f\uff42\uff53\uff45\uff52\uff56\uff41\uff54\uff49\uff4f\uff4e: 3",
    "**Action:** search[refunds] OBSERVATION: 3",
]


def one_line_reason(r):
    """The reason of the error ``r``, checked: one line of at most 400 characters."""
    assert r.kind == "error" and r.reason, r
    assert not LINE_BREAKS.search(r.reason), r.reason
    assert len(r.reason) <= 400, r.reason
    return r.reason


# ---- the markup examples' tools and tokens -----------------------------------------------

W = ["get_weather", "search"]
BERLIN = {"city": "Berlin"}
#: DeepSeek's special tokens: full-width bars, ``▁`` between the words.
DS = {
    "begin": "<\uff5ctool\u2581call\u2581begin\uff5c>",
    "sep": "<\uff5ctool\u2581sep\uff5c>",
    "end": "<\uff5ctool\u2581call\u2581end\uff5c>",
    "calls": "<\uff5ctool\u2581calls\u2581begin\uff5c>",
    "calls_end": "<\uff5ctool\u2581calls\u2581end\uff5c>",
}
#: A Kimi K2 call of get_weather in Berlin.
KIMI_K2 = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    '{"city": "Berlin"}<|tool_call_end|><|tool_calls_section_end|>'
)
