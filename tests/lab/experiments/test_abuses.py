"""Three abuses x three defences.

What the regex runs, what the schema names, what the grammar refuses.
"""

import json
import re

import pytest
from helpers.parsing_checks import DRIFT

from react_lab.lab.agent.parser import parse
from react_lab.lab.cli import main
from react_lab.lab.experiments.abuses import (
    ABUSES,
    DEFENCES,
    OUTCOMES,
    reply_text,
    run_abuses,
    strict_parse,
)
from react_lab.lab.notebook.plots import plot_trust_boundary
from react_lab.lab.notebook.tables import outcome_table
from react_lab.schema import validate_call
from react_lab.tools import default_tools

# (regex, schema) per abuse: the classic loop never names a field; the schema always does.
EXPECTED = {
    "malformed: missing comma": ("type_error", "rejected"),
    "malformed: date in words": ("wrong_call", "rejected"),
    "malformed: comma inside an argument": ("type_error", "ok"),
    "missing: required argument left out": ("type_error", "rejected"),
    "undeclared: extra argument": ("type_error", "rejected"),
    "undeclared: extra argument in a declared slot": ("wrong_call", "rejected"),
}


@pytest.fixture(scope="module")
def outcomes():
    return {(o.abuse, o.defence): o for o in run_abuses(defences=("regex", "schema"))}


def test_every_abuse_meets_both_defences_as_expected(outcomes):
    assert {a.label for a in ABUSES} == set(EXPECTED)
    for label, (regex, schema) in EXPECTED.items():
        assert outcomes[(label, "regex")].outcome == regex, outcomes[(label, "regex")].detail
        assert outcomes[(label, "schema")].outcome == schema, outcomes[(label, "schema")].detail


def test_the_regex_runs_a_silently_wrong_query(outcomes):
    wrong = outcomes[("malformed: date in words", "regex")]
    assert wrong.rows == []  # "no invoices", which is false
    assert "i.issued >= 'July 1st'" in wrong.sql[-1]
    assert "the intended call returns 3 rows" in wrong.detail
    slot = outcomes[("undeclared: extra argument in a declared slot", "regex")]
    assert "i.issued >= 'include_deleted'" in slot.sql[-1] and slot.rows == []


def test_the_schema_names_the_missing_and_the_undeclared_field(outcomes):
    assert outcomes[("missing: required argument left out", "schema")].detail.startswith(
        "since: required argument is missing"
    )
    assert outcomes[("undeclared: extra argument", "schema")].detail.startswith(
        "include_deleted: not a declared argument"
    )
    assert (
        "since: 'July 1st' is not a 'date'"
        in outcomes[("malformed: date in words", "schema")].detail
    )
    assert "TypeError" in outcomes[("missing: required argument left out", "regex")].detail


def test_nothing_touches_the_shipped_database(shipped_db_unchanged):
    outcomes = run_abuses(defences=("regex", "schema"))
    assert len(outcomes) == 2 * len(ABUSES)


def test_the_table_and_the_picture_render(outcomes):
    table = outcome_table(list(outcomes.values()))
    assert table.count("<tr>") == len(ABUSES) + 1 and "wrong_call" in table
    import matplotlib

    matplotlib.use("Agg")
    fig = plot_trust_boundary()
    assert len(fig.axes) == 1 and "decision" in fig.axes[0].get_title()


def test_unknown_defence_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown defence 'regexp'; use regex, schema, grammar"):
        run_abuses(defences=("regexp",))


@pytest.mark.model
def test_cli_abuses_json_with_the_grammar_on_the_embedded_model(capsys):
    assert main(["abuses", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == len(ABUSES) * len(DEFENCES)
    assert all(set(r) == {"abuse", "defence", "outcome", "detail"} for r in rows)
    assert all(r["outcome"] in OUTCOMES for r in rows)
    grammar = {r["abuse"]: r for r in rows if r["defence"] == "grammar"}
    tools = default_tools()
    for label, (_, schema) in EXPECTED.items():
        # the grammar refuses exactly what the schema rejects
        assert grammar[label]["outcome"] == ("impossible" if schema == "rejected" else "ok"), (
            grammar[label]
        )
        # and invited to the abuse, the model wrote a call (not "sampled: None"): a declared tool
        # with arguments that pass its schema, checked here again from the arguments themselves
        sampled = re.search(r"; sampled: (\w+)\((.*)\) -- schema-valid$", grammar[label]["detail"])
        assert sampled and sampled[1] in tools, grammar[label]["detail"]
        assert validate_call(tools[sampled[1]], json.loads(sampled[2])) == [], grammar[label][
            "detail"
        ]


def test_reply_text_embeds_the_arguments_verbatim():
    for abuse in ABUSES:
        assert abuse.arguments in reply_text(abuse)


# ---- strict_parse: the classic loop's reading, the regex defence --------------------------------


def test_strict_parse_reads_the_seed_regex_and_splits_on_commas():
    parsed = strict_parse("Thought: t\nAction: list_invoices[cus_8812, 2026-07-01]")
    assert (parsed.kind, parsed.tool, parsed.dialect) == ("action", "list_invoices", "strict")
    assert parsed.args == ["cus_8812", "2026-07-01"]
    assert strict_parse("Thought: done\nAnswer: 42").answer == "42"  # "Answer:" is read first


@pytest.mark.parametrize("text", DRIFT)
def test_strict_parse_refuses_drift_the_tolerant_parser_accepts(text):
    assert strict_parse(text).kind == "error"
    assert parse(text).kind == "action"
