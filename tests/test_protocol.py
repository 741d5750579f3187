"""The text protocol: the seed's strict regex, the stop sequence, the prompt and its exemplars.

The tolerant parser is tests/test_parser.py (its properties and time bounds tests/test_fuzz.py);
the public cases are tests/test_public_cases.py.
"""

import pytest
from helpers.parsing_checks import DRIFT

from react_lab.lab.agent.parser import find_forged, parse, trim_partial_stop
from react_lab.protocol import ACTION_RE, STOP

# ---- the seed's strict regex, kept exactly ---------------------------------------------------


def test_seed_regex_is_anchored_and_exact():
    assert ACTION_RE.pattern == r"^Action:\s*(\w+)\[(.*)\]\s*$"
    assert ACTION_RE.search("I said Action: search[x] in passing") is None
    match = ACTION_RE.search("Thought: t\nAction: list_invoices[cus_8812, 2026-07-01]")
    assert match.groups() == ("list_invoices", "cus_8812, 2026-07-01")


@pytest.mark.parametrize("text", DRIFT)
def test_seed_regex_rejects_drift_the_tolerant_parser_accepts(text):
    assert ACTION_RE.search(text) is None
    assert parse(text).kind == "action"


def test_stop_sequence_and_forgery_detection():
    assert "Observation:" in STOP
    assert find_forged("Thought: x\nAction: a[b]\nObservation: 1") is not None
    assert find_forged("The observation: rows were fine") is None  # not at a line start
    assert trim_partial_stop("Action Input: x\nObs") == "Action Input: x"
    assert trim_partial_stop("Action Input: x\nObservational") == "Action Input: x\nObservational"


# ---- the prompt ------------------------------------------------------------------------------


def test_exemplars_match_the_tools():
    """An exemplar teaches by example, so its observations must be what the tools really return."""
    from react_lab.protocol import EXEMPLARS
    from react_lab.tools import call_tool, default_tools

    tools = default_tools()
    for ex in EXEMPLARS:
        for _, action, observation in ex.steps:
            parsed = parse(f"Action: {action}", tools=list(tools))
            assert parsed.kind == "action", action
            assert call_tool(tools, parsed.tool, parsed.args).text == observation, action


def test_prompt_has_labels_tools_exemplar_and_question():
    from react_lab.protocol import EXEMPLARS, build_prompt
    from react_lab.tools import default_tools

    tools = default_tools()
    prompt = build_prompt("Was cus_8812 charged twice?", tools.values())
    for label in ("Thought:", "Action:", "Observation:", "Answer:"):
        assert label in prompt
    for tool in tools.values():
        assert tool.usage in prompt
    assert EXEMPLARS[0].question in prompt and EXEMPLARS[1].question not in prompt
    assert prompt.endswith("Question: Was cus_8812 charged twice?\nThought:")
    three = build_prompt("q", tools.values(), EXEMPLARS)
    assert all(ex.question in three for ex in EXEMPLARS)


def test_the_guards_add_to_the_prompt_through_build_prompt_only():
    from react_lab.lab.agent.guards import Guards
    from react_lab.lab.guards import CITATION_NOTE, DATA_NOTE, LabGuards
    from react_lab.protocol import EXEMPLARS, INSTRUCTIONS, build_prompt
    from react_lab.tools import default_tools

    tools = default_tools()
    plain = build_prompt("q", tools.values())
    guards = LabGuards(mark_data=True, require_citation=True)
    marked = build_prompt("q", tools.values(), notes=guards.notes(), mark=guards.mark)
    assert marked.startswith(f"{INSTRUCTIONS}\n{DATA_NOTE}\n{CITATION_NOTE}\n")
    assert (
        EXEMPLARS[0].question in marked and "Observation: <<data from list_invoices>> [" in marked
    )
    assert build_prompt("q", tools.values(), notes=Guards().notes(), mark=Guards().mark) == plain
    assert (
        build_prompt("q", tools.values(), notes=LabGuards().notes(), mark=LabGuards().mark) == plain
    )
