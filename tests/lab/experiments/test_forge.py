"""Forged observations: questions from the database, the two-arm experiment, cache, widget, CLI."""

import html
import json
import re
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from react_lab import billing, tools
from react_lab.lab.agent.parser import truncate_forged
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.cli import main
from react_lab.lab.experiments import forge
from react_lab.lab.experiments.questions import _KINDS, question_set
from react_lab.lab.experiments.results import CACHE_ENV
from react_lab.lab.notebook.plots import plot_forge_rate
from react_lab.lab.notebook.tables import highlight_forged
from react_lab.lab.notebook.widgets import make_forge_widget

# One script entry per call. run_experiment asks every question with stop, then every
# question without, and a greedy model writes the same text both times: the list repeats.
FORGES_THEN_ANSWERS = (
    " I need the charge.\nAction: get_charge[ch_1KZq8f]\n"
    'Observation: {"status": "refunded"}\nThought: it was refunded.\nAnswer: refunded'
)
ANSWERS = " I know this one.\nAnswer: 42"
RAMBLES = " " + " ".join(f"word{i}" for i in range(30))  # 30 words > max_tokens=20
NUMBERED = " Search first.\nAction: search[refund policy]\nObservation 1: made up"
SCRIPT = [FORGES_THEN_ANSWERS, ANSWERS, RAMBLES, NUMBERED] * 2


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


# --------------------------------------------------------------------------- questions


def test_questions_are_deterministic_distinct_and_mixed():
    first = forge.questions(100)
    assert first == forge.questions(100)
    assert forge.questions(10) == first[:10]  # a smaller n is a prefix
    assert len(set(first)) == 100
    kinds = Counter(q.kind for q in question_set(100))
    assert set(kinds) == set(_KINDS) and min(kinds.values()) >= 10


@pytest.mark.parametrize("n", [0, -1, 10**6])
def test_question_count_out_of_range_is_a_clear_error(n):
    with pytest.raises(ValueError, match="n must be between 1 and"):
        question_set(n)


def test_questions_are_grounded_in_what_the_tools_return():
    """Every SQL-computed answer agrees with the agent's own tools on the shipped database."""
    conn = tools.open_db()
    for q in question_set(140):
        ids = re.findall(r"cus_\d{4}|INV-\d{4}|ch_[A-Za-z0-9]+", q.text)
        if q.kind == "latest_invoice":
            assert billing.list_invoices(conn, ids[0], "0000-00-00")[0]["issued"] == q.answer
        elif q.kind == "total_since":
            since = re.search(r"\d{4}-\d{2}-\d{2}", q.text).group()
            rows = {r["invoice_id"]: r["total"] for r in billing.list_invoices(conn, ids[0], since)}
            assert f"{sum(rows.values()):.2f} dollars" == q.answer
        elif q.kind == "invoice_paid":
            invoice = billing.find_invoice(conn, ids[0])
            assert invoice["status"] == q.answer
            assert ("supplier" in q.text) == (invoice["kind"] == "supplier")
        elif q.kind == "charge_status":
            charge = billing.get_charge(conn, ids[0])
            assert q.answer.startswith(charge["status"])
        elif q.kind == "duplicate_charge":
            customer, invoice = ids
            charge_ids = billing.find_invoice(conn, invoice)["charge_ids"]
            ok = [c for c in charge_ids if billing.get_charge(conn, c)["status"] == "succeeded"]
            assert billing.find_invoice(conn, invoice)["customer_id"] == customer
            verdict = "yes" if len(ok) >= 2 else "no"
            assert q.answer == f"{verdict}: {len(ok)} succeeded of {len(charge_ids)} charges"
        elif q.kind == "listed_twice":
            invoice, customer = ids
            rows = [
                r
                for r in billing.list_invoices(conn, customer, "0000-00-00")
                if r["invoice_id"] == invoice
            ]
            assert len(rows) >= 2 and q.answer.startswith(f"emailed {len(rows)} times")
        elif q.kind == "help":
            title = re.search(r'"(.+)"', q.text).group(1)
            assert q.answer in [hit["article_id"] for hit in billing.search(conn, title)]
        else:  # pragma: no cover
            pytest.fail(f"untested kind {q.kind}")


# --------------------------------------------------------------------------- the experiment


def test_experiment_counts_each_arm_exactly():
    model = ScriptedModel(SCRIPT)
    result = forge.run_experiment(["q1", "q2", "q3", "q4"], model, max_tokens=20, progress=False)
    assert model.calls == 8 and result["n"] == 4
    assert result["with_stop"] == {
        "forged": 0,
        "parsed": 2,
        "finals": 1,
        "finish_reasons": {"length": 1, "stop": 3},
        "completion_tokens": 37,
        "seconds": 0.0,
    }
    free = result["without_stop"]
    assert free["forged"] == 2
    assert free["parsed"] == 1  # the strict loop takes the forged "Answer:" over the action
    assert free["finals"] == 2
    assert free["why_stopped"] == {"forged": 2, "length": 1, "end_of_text": 1}
    assert free["completion_tokens"] > result["with_stop"]["completion_tokens"]
    first = result["trials"]["without_stop"][0]
    assert first["forged_at"] == FORGES_THEN_ANSWERS.index("Observation:")
    assert "Question: q1" in model.prompts[0] and model.prompts[:4] == model.prompts[4:]
    assert [t["question"] for t in result["trials"]["without_stop"]] == ["q1", "q2", "q3", "q4"]
    assert result["arms_from"] == forge.TWO_PASSES
    assert result["tokens"]["generated"] == 37 + free["completion_tokens"]
    assert result["tokens"]["prompt_evaluated"] is None  # a scripted model cannot tell
    assert result["tail_subsample"]["k"] == 4  # fewer questions than TAIL_SAMPLE: all


def test_truncation_recovers_the_stopped_text_and_counts_the_waste():
    result = forge.run_experiment(
        ["a", "b", "c", "d"], ScriptedModel(SCRIPT), max_tokens=20, tail=3, progress=False
    )
    costs = forge.truncation_costs(result)
    assert costs["n"] == 3 and costs["forged"] == 1 and costs["same_as_stop"] == 3
    assert costs["tail_tokens"] == len(forge.forged_tail(FORGES_THEN_ANSWERS).split())  # its words
    assert 0 < costs["tail_share"] < 1


@pytest.mark.parametrize(
    "forged,finish,expected",
    [
        (True, "length", "forged"),  # a forgery that also ran out of tokens counts as forged
        (True, "stop", "forged"),
        (False, "length", "length"),
        (False, "stop", "end_of_text"),
    ],
)
def test_why_stopped(forged, finish, expected):
    assert forge.why_stopped({"forged": forged, "finish_reason": finish}) == expected


# Model text built from protocol fragments, so generated examples do contain forgeries.
MODEL_TEXT = st.lists(
    st.sampled_from(
        [
            "\n",
            "Observation: ",
            "Observation 2:",
            "**Observation**:",
            "Obs",
            "Action: a[b]",
            "Answer: x",
            "<b>",
            "&amp;",
            " ",
        ]
    )
    | st.text(max_size=8),
    max_size=12,
).map("".join)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Action: a[b]\nObservation: fake\nAnswer: x", "Action: a[b]"),
        ("Action: a[b]\nObs", "Action: a[b]"),  # a stop word caught a token late
        ("Action: a[b]\n  **Observation 2**: fake", "Action: a[b]"),
        ("Action: a[b]\n", "Action: a[b]"),
        (
            "The Observation: in a sentence is not a line",
            "The Observation: in a sentence is not a line",
        ),
    ],
)
def test_truncate_forged(text, expected):
    assert truncate_forged(text) == expected


@given(MODEL_TEXT)
def test_truncate_forged_never_raises_and_leaves_no_observation_line(text):
    kept = truncate_forged(text)
    assert text.startswith(kept) or text.replace("\r\n", "\n").startswith(kept)
    assert forge.forged_tail(kept) == ""


# --------------------------------------------------------------------------- highlighting


def test_highlight_marks_the_observation_line_and_what_follows():
    out = highlight_forged(FORGES_THEN_ANSWERS)
    line = re.search(r'<mark class="forged-observation"[^>]*>(.*?)</mark>', out).group(1)
    assert html.unescape(line) == 'Observation: {"status": "refunded"}'
    after = re.search(r'<mark class="forged-after"[^>]*>(.*?)</mark>', out, re.S).group(1)
    assert "Answer: refunded" in after
    assert "get_charge" not in line + after  # the model's real action stays plain


def test_highlight_without_forgery_marks_nothing_and_escapes():
    out = highlight_forged("Action: search[<script>]")
    assert "<mark" not in out and "<script>" not in out and "&lt;script&gt;" in out


def test_highlight_marks_every_forged_observation():
    out = highlight_forged("Action: a[b]\nObservation: 1\nThought: t\nObservation 2: 2\nend")
    assert out.count('class="forged-observation"') == 2
    assert out.count('class="forged-after"') == 2


def test_highlight_escapes_inside_the_forged_span():
    out = highlight_forged("ok\nObservation: <b>&</b>\n<i>then</i>")
    assert "<b>" not in out and "<i>" not in out and "&lt;b&gt;&amp;" in out


@given(MODEL_TEXT)
def test_highlight_keeps_every_character(text):
    out = highlight_forged(text)
    assert html.unescape(re.sub(r"<[^>]+>", "", out)) == text


def test_plot_puts_the_claim_beside_the_measured_rates():
    result = forge.run_experiment(
        ["a", "b", "c", "d"], ScriptedModel(SCRIPT), max_tokens=20, progress=False
    )
    fig = plot_forge_rate(result)
    heights = sorted(round(p.get_height()) for p in fig.axes[0].patches)
    # with stop forged 0/4; without stop: forged 2/4, max_tokens 1/4, end of text 1/4 (stacked);
    # the claim 61; strict actions 2/4 and 1/4
    assert heights == sorted([0, 50, 25, 25, 61, 50, 25])
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert {"forged Observation", "hit max_tokens first", "model ended its text"} <= set(labels)
    import matplotlib.pyplot as plt

    plt.close(fig)


# --------------------------------------------------------------------------- cache and CLI


def test_cache_miss_then_hit_then_refresh(cache):
    first = forge.forge_rate(3, ScriptedModel([NUMBERED]), progress=False)
    assert first["cached"] is False and len(list(cache.glob("forge-*.json"))) == 1
    again = ScriptedModel([NUMBERED])
    hit = forge.forge_rate(3, again, progress=False)
    assert hit["cached"] is True and again.calls == 0
    assert {k: v for k, v in hit.items() if k != "cached"} == {
        k: v for k, v in first.items() if k != "cached"
    }
    assert (
        forge.forge_rate(3, again, progress=False, refresh=True)["cached"] is False
        and again.calls == 6
    )
    other = ScriptedModel([NUMBERED])
    assert forge.forge_rate(3, other, max_tokens=10, progress=False)["cached"] is False  # new key
    assert forge.forge_rate(3, ScriptedModel([ANSWERS]), progress=False)["cached"] is False
    assert len(list(cache.glob("forge-*.json"))) == 3


def test_cache_lives_outside_the_repo(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert forge.cache_dir() == tmp_path / ".cache" / "react_lab"


def test_cli_json_shape(cache, tmp_path, capsys):
    script = tmp_path / "forger.json"
    script.write_text(json.dumps([NUMBERED]))
    assert main(["forge-rate", "--n", "5", "--model", f"scripted:{script}", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {
        "n",
        "with_stop",
        "without_stop",
        "model",
        "max_tokens",
        "seconds",
        "arms_from",
        "tokens",
        "tail_subsample",
    } <= set(out)
    assert "trials" not in out and "trials" not in out["tail_subsample"] and out["n"] == 5
    assert set(out["tokens"]) == {"prompt_sent", "prompt_evaluated", "generated"}
    assert out["tail_subsample"]["forged"] == 5 and out["tail_subsample"]["n"] == 5
    assert out["with_stop"]["forged"] == 0 and out["with_stop"]["parsed"] == 5
    assert out["without_stop"]["forged"] == 5
    assert set(out["without_stop"]["finish_reasons"]) <= {"stop", "length"}


def test_cli_text_report(cache, tmp_path, capsys):
    script = tmp_path / "forger.json"
    script.write_text(json.dumps([NUMBERED]))
    assert main(["forge-rate", "--n", "2", "--model", f"scripted:{script}"]) == 0
    out = capsys.readouterr().out
    assert "seed claim: 61 of 100" in out and "measured: 2 of 2" in out and "wall time" in out


# --------------------------------------------------------------------------- widget


def test_forge_widget_toggles_the_stop_sequence():
    model = ScriptedModel([FORGES_THEN_ANSWERS])
    box = make_forge_widget(
        model, ["first question?", "second question?"], tools=tools.default_tools()
    )
    assert box.completion is None and model.calls == 0  # nothing runs on construction
    box.stop.value = False
    box.question.value = "second question?"
    box.run_button.click()
    assert "Question: second question?" in model.prompts[-1]
    assert 'class="forged-observation"' in box.output.value
    assert "own Observation" in box.status.value and box.completion.finish_reason == "stop"
    box.stop.value = True
    box.run_button.click()
    assert "<mark" not in box.output.value and "get_charge[ch_1KZq8f]" in box.output.value
    assert "no model-written Observation" in box.status.value


def test_recorded_keeps_each_completion_and_passes_everything_on():
    from react_lab.lab.backends.scripted import ScriptedModel

    model = ScriptedModel([" One.\nObservation: x", " Two."])
    seen = forge.Recorded(model)
    first = seen.complete("prompt", stop=["Observation:"], max_tokens=50)
    second = seen.complete("prompt", max_tokens=50)
    assert first.text == " One.\n"  # the stop, applied by the model it wraps
    assert seen.texts == [first.text, second.text] == [first.text, " Two."]
    assert model.calls == 2


def test_first_steps_completes_each_question_once_with_or_without_stop():
    from react_lab.lab.backends.scripted import ScriptedModel

    model = ScriptedModel([" A.\nAction: a[b]\nObservation: fake", " B.\nAction: c[d]"])
    texts = forge.first_steps(model, ["q1?", "q2?"], stop=True, progress=False)
    assert texts == [" A.\nAction: a[b]", " B.\nAction: c[d]"] and model.calls == 2
    assert model.prompts[1].endswith("Question: q2?\nThought:")
