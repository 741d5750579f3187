"""What notebook 04 uses around the learner's ``observe``: bad calls run through it, and a tally.

:func:`meet` sends each call through the learner's ``observe`` as the loop would, prints
what came back, and counts from what happened: the calls the tool ran, and those refused,
by counting the arguments (``call_tool``) or by the tool's JSON Schema (notebook 04's rule 8).
"""

from __future__ import annotations

import re

from ..lab.experiments import abuses, results  # noqa: F401 -- the abuses, 03's results file
from ..protocol import ACTION_RE
from ..schema import schema_validator

#: How ``call_tool`` refuses a call with the wrong number of arguments.
BY_COUNT = re.compile(r"^Error: \w+ takes \d+ arguments?\b")


def schema_refuses(call: str, tools: dict) -> bool:
    """True when the tool's JSON Schema refuses ``call``'s arguments named as rule 6 names them
    (in the schema's order): what the learner's refusal, however worded, is a refusal of."""
    match = ACTION_RE.search("Action: " + call)
    if match is None or match.group(1) not in tools:
        return False
    schema = tools[match.group(1)].parameters
    named = dict(zip(schema.get("properties", ()), [a.strip() for a in match.group(2).split(",")]))
    return any(True for _ in schema_validator(schema).iter_errors(named))


def meet(observe, calls, tools, width: int = 62) -> None:
    """Print ``observe("Action: " + call, tools)`` for each call, then what ran and what not.

    Each line: the call, then the observation's text (cut to ``width``). The last line
    counts from the observations: the tool ran (and what those runs returned), refused by
    count, refused by the schema (an error for a call the schema refuses, however the learner's
    ``observe`` words it: :func:`schema_refuses`), or another error.
    """
    ran, by_count, by_schema, other = [], 0, 0, 0
    for call in calls:
        said = observe("Action: " + call, tools)
        text = next(
            (line[len("Observation: ") :] for line in said.splitlines() if line.startswith("Obs")),
            said.strip(),
        )
        print(f"{call:<52} {text[:width]}")
        if BY_COUNT.match(text):
            by_count += 1
        elif text.startswith("Error:") and schema_refuses(call, tools):
            by_schema += 1
        elif text.startswith("Error:"):
            other += 1
        else:
            ran.append(text)
    each = "it" if len(ran) == 1 else "each"
    got = f" ({each} came back {ran[0]})" if ran and len(set(ran)) == 1 else ""
    print(
        f"your observe ran {len(ran)} of {len(calls)}{got}; refused {len(calls) - len(ran)}: "
        f"{by_count} by counting the arguments, {by_schema} by the schema"
        + (f", {other} otherwise" if other else "")
    )
