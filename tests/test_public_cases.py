"""Every public failure case as a test with its right value; the package's copy matches the shared one.

The cases ship inside the package (``react_lab/data/cases/``, read by
:func:`react_lab.data.load_cases`), so they are found on Binder too. When the course's
``shared/cases`` folder sits beside the repository (as in CI), the copy must hold every
case in it, unchanged.
"""
import json
from pathlib import Path

import pytest

from react_lab.data import load_cases
from react_lab.parser import parse
from react_lab.schema import check_arguments
from react_lab.tools import SCHEDULE_PAYMENT, Tool, default_tools

SHARED = Path(__file__).resolve().parents[2] / "shared" / "cases"
PARSE_CASES = load_cases("parse")
ARG_CASES = load_cases("native-args")


def test_the_package_carries_the_cases_with_their_sources():
    assert len(PARSE_CASES) >= 16 and len(ARG_CASES) >= 8
    for case in PARSE_CASES + ARG_CASES:
        assert case["id"] and case["source"] and case["why"], case["id"]
    assert len({c["id"] for c in PARSE_CASES + ARG_CASES}) == len(PARSE_CASES) + len(ARG_CASES)
    with pytest.raises(ValueError, match="parse, native-args"):
        load_cases("text")


@pytest.mark.parametrize("kind,name", [("parse", "public-parse-failures.jsonl"),
                                       ("native-args", "public-native-arg-failures.jsonl")])
def test_every_shared_case_is_in_the_package_copy_unchanged(kind, name):
    shared = SHARED / name
    if not shared.exists():
        pytest.skip(f"no shared cases beside the repository ({shared})")
    ours = {c["id"]: c for c in load_cases(kind)}
    for line in shared.read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            assert ours.get(case["id"]) == case, f"{case['id']} differs from {shared}"


# ---- text cases: the parser's result is the case's right value ---------------------------

@pytest.mark.parametrize("case", PARSE_CASES, ids=[c["id"] for c in PARSE_CASES])
def test_parse_case(case):
    result = parse(case["model_output"], tools=case.get("tools"))
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
    for accepted in case.get("accept", []):  # newer cases list their accepted values too
        assert accepted == expected
    assert "\n" not in (result.reason or "")


# ---- native argument cases: refused naming the words, or decoded to the accepted arguments ----

TOOLS = {**default_tools(),
         # schedule_payment's schema is checked directly: no working copy of the database needed
         "schedule_payment": Tool("schedule_payment", lambda **kw: kw, "test double", SCHEDULE_PAYMENT,
                                  side_effect=True)}


def _accepts(accept: dict, args, errors: list[str]) -> bool:
    if accept["kind"] == "error":
        return bool(errors) and all(any(w in e for e in errors) for w in accept["errors_mention"])
    return not errors and args == accept["input"]


@pytest.mark.parametrize("case", ARG_CASES, ids=[c["id"] for c in ARG_CASES])
def test_native_argument_case(case):
    args, errors = check_arguments(TOOLS[case["tool"]], case["arguments"])
    assert any(_accepts(a, args, errors) for a in case["accept"]), (args, errors)
    assert all(e and "\n" not in e for e in errors)  # each message is one line the model reads
