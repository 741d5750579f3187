"""The embedded model's cache rules and counters, on a stand-in for llama_cpp.Llama (no model).

The same pieces on the real model (snapshots restored, tokens identical to the stock calls)
are checked in tests/test_speed_model.py.
"""
import numpy as np
import pytest

from react_lab.llama_state import MIN_EVAL, PrefixState, Usage, common_prefix, trim_cache
from react_lab.models import LocalModel


class FakeContext:
    def __init__(self):
        self.removed = []

    def kv_cache_seq_rm(self, seq, start, end):
        self.removed.append(start)
        return True


class FakeLlm:
    """What trim_cache touches: the cached token ids, their count, and the KV cache."""

    def __init__(self, cached):
        self.input_ids = np.zeros(64, dtype=np.intc)
        self.input_ids[:len(cached)] = cached
        self.n_tokens = len(cached)
        self._ctx = FakeContext()


@pytest.mark.parametrize("cached, prompt, evaluated", [
    ([], [1, 2, 3, 4], 4),                        # nothing cached: all of it
    ([1, 2, 3, 4], [1, 2, 3, 4, 5, 6], 2),        # a cached prefix: only the new tokens
    ([1, 2, 3, 4], [1, 2, 3, 4], MIN_EVAL),       # the same prompt again: still two, never one
    ([1, 2, 3, 4], [1, 2, 3, 4, 5], MIN_EVAL),    # a one-token suffix: two
    ([1, 2, 9, 9, 9], [1, 2, 3, 4, 5, 6], 4),     # diverges after two tokens
    ([7], [1], 1),                                # a one-token prompt is one token
])
def test_trim_cache_reuses_the_shared_prefix_but_evaluates_at_least_two_tokens(cached, prompt, evaluated):
    llm = FakeLlm(cached)
    assert trim_cache(llm, prompt) == evaluated
    assert llm.n_tokens == len(prompt) - evaluated
    assert llm.input_ids[:llm.n_tokens].tolist() == prompt[:llm.n_tokens]


def test_trim_cache_drops_what_the_prompt_does_not_share():
    llm = FakeLlm([1, 2, 3, 4, 5, 6, 7, 8])
    trim_cache(llm, [1, 2, 3, 9, 9])
    assert llm._ctx.removed == [3] and llm.n_tokens == 3


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2 and common_prefix([], [1]) == 0
    assert common_prefix([1, 2], [1, 2, 3]) == 2


def test_a_prefix_snapshot_serves_prompts_that_continue_it():
    state = PrefixState([1, 2, 3], b"kv")
    assert state.starts([1, 2, 3, 4]) and not state.starts([1, 2, 3]) and not state.starts([1, 2, 4, 5])
    assert state.nbytes == 2


def test_usage_totals_and_the_difference_of_two_readings():
    usage = Usage()
    usage.add(600, 600, 50, 2.5)
    before = usage.snapshot()
    usage.add(610, 12, 40, 0.6)
    usage.add(620, 2, 30, 0.4)
    assert (usage - before).to_dict() == {"calls": 2, "prompt_sent": 1230, "prompt_evaluated": 14,
                                          "generated": 70, "seconds": 1.0}
    assert before.calls == 1  # a snapshot does not move


class RecordingLlama:
    made = []

    def __init__(self, **kwargs):
        RecordingLlama.made.append(kwargs)

    def close(self):
        pass


def test_the_model_gets_the_usable_cpus_for_both_thread_counts_and_no_flash_attention(monkeypatch):
    llama_cpp = pytest.importorskip("llama_cpp")
    monkeypatch.setattr(llama_cpp, "Llama", RecordingLlama)
    monkeypatch.setenv("REACT_LAB_THREADS", "3")
    RecordingLlama.made = []
    LocalModel("unused.gguf").llm
    made = RecordingLlama.made[0]
    assert made["n_threads"] == made["n_threads_batch"] == 3 and made["flash_attn"] is False
    LocalModel("unused.gguf", n_threads=1).llm
    assert RecordingLlama.made[1]["n_threads_batch"] == 1


def test_close_forgets_the_snapshots_and_grammars(monkeypatch):
    llama_cpp = pytest.importorskip("llama_cpp")
    monkeypatch.setattr(llama_cpp, "Llama", RecordingLlama)
    model = LocalModel("unused.gguf", n_threads=1)
    model.llm
    model.prefixes.append(PrefixState([1, 2], b"kv"))
    model.close()
    assert model.prefixes == [] and model._llm is None


def test_a_snapshot_buffer_is_copied_without_a_list_of_ints():
    """Reading 20 MB out of a ctypes array must not cost 8x that in a transient list (peak RSS)."""
    import subprocess
    import sys

    code = ("import ctypes, resource\n"
            "from react_lab.llama_state import buffer_bytes\n"
            "buf = (ctypes.c_uint8 * 20_000_000)()\n"
            "buf[5] = 7\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "data = buffer_bytes(buf, 10_000_000)\n"
            "grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before\n"
            "assert len(data) == 10_000_000 and data[5] == 7 and data[6] == 0\n"
            "print(grew // 1024)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) < 30  # MiB: the 10 MB copy, not an 80 MB list of ints
    import ctypes

    from react_lab.llama_state import buffer_bytes
    with pytest.raises(ValueError, match="cannot read"):
        buffer_bytes((ctypes.c_uint8 * 4)(), 5)
