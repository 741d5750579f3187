"""Every public failure case as a test with its right value.

The package's copy matches the shared one.

The cases ship inside the package (``react_lab/data/cases/``, read by
:func:`react_lab.data.load_cases`), so they are found on Binder too. When the course's
``shared/cases`` folder sits beside the repository (as in CI), the copy must hold every
case in it, unchanged.
"""

import json
import re
from pathlib import Path

import pytest

from react_lab.billing import SCHEDULE_PAYMENT
from react_lab.data import load_cases
from react_lab.lab.agent.parser import parse
from react_lab.schema import check_arguments
from react_lab.tools import Tool, declared, default_tools

SHARED = Path(__file__).resolve().parents[2] / "shared" / "cases"
PARSE_CASES = load_cases("parse")
ARG_CASES = load_cases("native-args")


def test_the_package_carries_the_cases_with_their_sources():
    assert len(PARSE_CASES) >= 27 and len(ARG_CASES) >= 14
    for case in PARSE_CASES + ARG_CASES:
        assert case["id"] and case["source"] and case["why"], case["id"]
    assert len({c["id"] for c in PARSE_CASES + ARG_CASES}) == len(PARSE_CASES) + len(ARG_CASES)
    with pytest.raises(ValueError, match="parse, native-args"):
        load_cases("text")


@pytest.mark.parametrize(
    "kind,name",
    [("parse", "public-parse-failures.jsonl"), ("native-args", "public-native-arg-failures.jsonl")],
)
def test_every_shared_case_is_in_the_package_copy_unchanged(kind, name):
    shared = SHARED / name
    if not shared.exists():
        pytest.skip(f"no shared cases beside the repository ({shared})")
    ours = {c["id"]: c for c in load_cases(kind)}
    for line in shared.read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            assert ours.get(case["id"]) == case, f"{case['id']} differs from {shared}"


# ---- text cases: the parser's result is one of the case's accepted values ----------------

GENERIC = "no action and no answer found"
#: What an accepted refusal names: a quoted name (an apostrophe inside a word, "Gemma 4's",
#: quotes nothing), a code point, a format or label name, an identifier.
_NAMES = re.compile(r"(?<!\w)'[^']+'(?!\w)|U\+[0-9A-F]{4}|\b[A-Z][A-Za-z]{2,}\b|\b\w+[._]\w+\b")
_NOT_NAMES = {"The", "This", "That", "JSON", "NAME"}


def _names(reason: str) -> set[str]:
    return {n for n in _NAMES.findall(reason) if n not in _NOT_NAMES}


def accepts(accepted: dict, result) -> bool:
    """Whether the parser's ``result`` is the accepted value: the same call, the same answer,
    or a one-line refusal that names what the accepted refusal names (never the generic one)."""
    if result.kind != accepted["kind"]:
        return False
    if accepted["kind"] == "action":
        return (result.tool, result.input) == (accepted["tool"], accepted["input"])
    if accepted["kind"] == "final":
        return result.answer == accepted["answer"]
    reason = result.reason or ""
    return (
        GENERIC not in reason
        and "\n" not in reason
        and all(n.lower() in reason.lower() for n in _names(accepted.get("reason", "")))
    )


#: Cases that came with the 2025-2026 reports and fail until issue 35's fix lands (none now).
ISSUE_35: set[str] = set()


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            c,
            marks=pytest.mark.xfail(strict=True, reason="issue 35: call markup with a tag missing"),
        )
        if c["id"] in ISSUE_35
        else c
        for c in PARSE_CASES
    ],
    ids=[c["id"] for c in PARSE_CASES],
)
def test_parse_case(case):
    result = parse(case["model_output"], tools=case.get("tools"))
    assert "\n" not in (result.reason or "")
    if "accept" in case:  # newer cases list every value they accept, the expected one first
        expected = case["expected"]
        assert expected["kind"] in {a["kind"] for a in case["accept"]}
        assert any(accepts(a, result) for a in case["accept"]), result
        if result.kind == "error" == expected["kind"]:  # a refusal names what the case names
            assert accepts(expected, result), result
        return
    expected = case["expected"]
    assert result.kind == expected["kind"], result
    if expected["kind"] == "action":
        assert (result.tool, result.input) == (expected["tool"], expected["input"])
    elif expected["kind"] == "final":
        assert result.answer == expected["answer"]
    else:
        # An error the model can act on: it names the bad tool and, when there is a list, the tools.
        assert result.tool is not None and repr(result.tool) in result.reason
        for name in case.get("tools", []):
            assert name in result.reason
        if "no final-answer label" in expected["reason"]:
            assert result.reason == expected["reason"]


def test_a_refusal_is_accepted_only_when_it_names_what_it_saw():
    class R:  # the shape accepts() reads
        def __init__(self, kind, reason=None):
            self.kind, self.reason, self.tool, self.input, self.answer = (
                kind,
                reason,
                None,
                None,
                None,
            )

    harmony = {
        "kind": "error",
        "reason": "a Harmony tool call (to=functions.get_weather) was found",
    }
    assert accepts(harmony, R("error", "a Harmony tool call to functions.get_weather, not read"))
    assert not accepts(harmony, R("error", "a tool call to get_weather"))
    assert not accepts(
        {"kind": "error", "reason": "the model returned no text"},
        R("error", GENERIC + "; write one line"),
    )


# ---- native argument cases: refused naming the words, or decoded to the accepted arguments ----

TOOLS = {
    **default_tools(),
    # schedule_payment's schema is checked directly: no working copy of the database needed
    "schedule_payment": Tool(
        "schedule_payment", lambda **kw: kw, "test double", SCHEDULE_PAYMENT, side_effect=True
    ),
}


def _accepts(accept: dict, args, errors: list[str]) -> bool:
    if accept["kind"] == "error":
        words = [w.lower() for w in accept["errors_mention"]]  # "json" is JSON
        return bool(errors) and all(any(w in e.lower() for e in errors) for w in words)
    return not errors and args == accept["input"]


@pytest.mark.parametrize("case", ARG_CASES, ids=[c["id"] for c in ARG_CASES])
def test_native_argument_case(case):
    args, errors = check_arguments(TOOLS[case["tool"]], case["arguments"])
    assert any(_accepts(a, args, errors) for a in case["accept"]), (args, errors)
    assert all(e and "\n" not in e for e in errors)  # each message is one line the model reads


# ---- the text loop (react_lab.lab.agent.loop, a scripted model) runs each case as parse reads it


def _stand_ins(names, case):
    """A tool for each name the case declares, its parameters those the case's calls hold."""
    keys = {
        k: {}
        for a in case.get("accept", [case["expected"]])
        if a["kind"] == "action" and isinstance(a["input"], dict)
        for k in a["input"]
    }
    schema = {"type": "object", "properties": keys}
    return {n: Tool(n, lambda *a, **kw: {"ok": True}, "test double", schema) for n in names}


@pytest.mark.parametrize("case", PARSE_CASES, ids=[c["id"] for c in PARSE_CASES])
def test_the_text_loop_reads_each_case_as_parse_does(case):
    from react_lab.lab.agent.loop import ask
    from react_lab.lab.backends.scripted import ScriptedModel

    names = (
        case.get("tools")
        or [a["tool"] for a in case.get("accept", [case["expected"]]) if a["kind"] == "action"][:1]
    )
    # the bench's text loop declares only the names ACTION_RE reads (react_lab.lab.agent.checks)
    if not all(re.fullmatch(r"\w+", n) for n in names):
        pytest.skip(f"the text loop refuses to declare {names} (letters, digits and _ only)")
    tools = _stand_ins(names, case)
    read = parse(case["model_output"], tools=declared(tools), finish_reason="stop")
    model = ScriptedModel([case["model_output"]])
    result = ask("Was cus_8812 charged twice?", model, tools, max_steps=1)
    first = result.steps[0]
    if read.kind == "action":
        assert first.action["tool"] == read.tool, (first.action, read)
    elif read.kind == "final":
        assert result.answer == read.answer
    else:
        assert first.action is None and first.answer is None and read.reason in first.error
