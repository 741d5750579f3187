"""The embedded model's cache rules and counters, on a stand-in for llama_cpp.Llama (no model).

The same pieces on the real model (snapshots restored, tokens identical to the stock calls)
are checked in tests/lab/backends/test_speed_model.py.
"""

import numpy as np
import pytest

from react_lab.lab.backends.llama_state import (
    MIN_EVAL,
    PrefixState,
    Usage,
    common_prefix,
    trim_cache,
)
from react_lab.lab.backends.local import LocalModel


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
        self.input_ids[: len(cached)] = cached
        self.n_tokens = len(cached)
        self._ctx = FakeContext()


@pytest.mark.parametrize(
    "cached, prompt, evaluated",
    [
        ([], [1, 2, 3, 4], 4),  # nothing cached: all of it
        ([1, 2, 3, 4], [1, 2, 3, 4, 5, 6], 2),  # a cached prefix: only the new tokens
        ([1, 2, 3, 4], [1, 2, 3, 4], MIN_EVAL),  # the same prompt again: still two, never one
        ([1, 2, 3, 4], [1, 2, 3, 4, 5], MIN_EVAL),  # a one-token suffix: two
        ([1, 2, 9, 9, 9], [1, 2, 3, 4, 5, 6], 4),  # diverges after two tokens
        ([7], [1], 1),  # a one-token prompt is one token
    ],
)
def test_trim_cache_reuses_the_shared_prefix_but_evaluates_at_least_two_tokens(
    cached, prompt, evaluated
):
    llm = FakeLlm(cached)
    assert trim_cache(llm, prompt) == evaluated
    assert llm.n_tokens == len(prompt) - evaluated
    assert llm.input_ids[: llm.n_tokens].tolist() == prompt[: llm.n_tokens]


def test_trim_cache_drops_what_the_prompt_does_not_share():
    llm = FakeLlm([1, 2, 3, 4, 5, 6, 7, 8])
    trim_cache(llm, [1, 2, 3, 9, 9])
    assert llm._ctx.removed == [3] and llm.n_tokens == 3


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2 and common_prefix([], [1]) == 0
    assert common_prefix([1, 2], [1, 2, 3]) == 2


def test_a_prefix_snapshot_serves_prompts_that_continue_it():
    state = PrefixState([1, 2, 3], b"kv")
    assert (
        state.starts([1, 2, 3, 4])
        and not state.starts([1, 2, 3])
        and not state.starts([1, 2, 4, 5])
    )
    assert state.nbytes == 2


def test_usage_totals_and_the_difference_of_two_readings():
    usage = Usage()
    usage.add(600, 600, 50, 2.5)
    before = usage.snapshot()
    usage.add(610, 12, 40, 0.6)
    usage.add(620, 2, 30, 0.4)
    assert (usage - before).to_dict() == {
        "calls": 2,
        "prompt_sent": 1230,
        "prompt_evaluated": 14,
        "generated": 70,
        "seconds": 1.0,
    }
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


def test_a_snapshot_is_written_and_read_in_place_without_a_second_copy():
    """Capturing and restoring a 20 MB snapshot may hold it once, not 2-8 times (peak RSS)."""
    import subprocess
    import sys

    code = (
        "import ctypes\n"
        "import numpy as np\n"
        "import llama_cpp\n"
        "from react_lab.lab.backends.llama_state import PrefixState\n"
        "SIZE = 20_000_000\n"
        "def get_data(ctx, buf, size, seq):\n"
        "    ctypes.memset(buf, 7, size)\n"
        "    return size\n"
        "seen = []\n"
        "def set_data(ctx, buf, size, seq):\n"
        "    seen.append((size, buf[0], buf[size - 1]))\n"
        "    return size\n"
        "llama_cpp.llama_state_seq_get_size = lambda ctx, seq: SIZE\n"
        "llama_cpp.llama_state_seq_get_data = get_data\n"
        "llama_cpp.llama_state_seq_set_data = set_data\n"
        "class Ctx:\n"
        "    ctx = None\n"
        "    def kv_cache_seq_rm(self, *a): pass\n"
        "class Llm:\n"
        "    _ctx, n_tokens = Ctx(), 0\n"
        "    input_ids = np.arange(100)\n"
        "    def eval(self, tokens): self.n_tokens += len(tokens)\n"
        "llm = Llm()\n"
        "def kib(field):\n"
        "    line = next(l for l in open('/proc/self/status') if l.startswith(field + ':'))\n"
        "    return int(line.split()[1])\n"
        "open('/proc/self/clear_refs', 'w').write('5')  # the peak starts again from here\n"
        "before = kib('VmRSS')\n"
        "state = PrefixState.capture(llm, [1, 2, 3])\n"
        "llm.n_tokens = 0\n"
        "state.ensure(llm)\n"
        "grew = kib('VmHWM') - before\n"
        "assert state.nbytes == SIZE and seen == [(SIZE, 7, 7)] and state.restores == 1\n"
        "print(grew // 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) < 27  # MiB: the 19 MiB snapshot once, not a second copy beside it


@pytest.mark.parametrize(
    "n, size, calls",
    [
        (0, 128, []),
        (1, 128, [(0, 1)]),  # a generated token: one call of one
        (2, 128, [(0, 2)]),
        (128, 128, [(0, 128)]),
        (129, 128, [(0, 127), (127, 129)]),  # never a last call of one token
        (257, 128, [(0, 128), (128, 255), (255, 257)]),
        (300, 128, [(0, 128), (128, 256), (256, 300)]),
        (7, 3, [(0, 3), (3, 5), (5, 7)]),
    ],
)
def test_eval_cuts_cover_every_token_in_calls_of_at_most_size_and_never_one_alone(n, size, calls):
    from react_lab.lab.backends.llama_state import eval_cuts

    cuts = eval_cuts(n, size)
    assert cuts == calls
    assert [k for a, b in cuts for k in range(a, b)] == list(range(n))
    assert all(b - a <= size for a, b in cuts) and (
        n == 1 or all(b - a >= MIN_EVAL for a, b in cuts)
    )


def test_eval_cuts_refuses_calls_too_small_to_avoid_one_token():
    from react_lab.lab.backends.llama_state import eval_cuts

    for size in (1, 2):
        with pytest.raises(ValueError, match="more than 2"):
            eval_cuts(10, size)


def test_the_model_evaluates_prompts_in_small_calls_of_its_own_cutting(monkeypatch):
    llama_cpp = pytest.importorskip("llama_cpp")
    from react_lab.lab.backends.llama_state import EVAL_CALL_TOKENS

    calls = []

    class Stock(RecordingLlama):
        def eval(self, tokens):
            calls.append(len(tokens))

    monkeypatch.setattr(llama_cpp, "Llama", Stock)
    RecordingLlama.made = []
    llm = LocalModel("unused.gguf", n_threads=1).llm
    assert (
        RecordingLlama.made[0]["n_batch"] == RecordingLlama.made[0]["n_ubatch"] == EVAL_CALL_TOKENS
    )
    llm.n_batch = EVAL_CALL_TOKENS
    llm.eval(list(range(2 * EVAL_CALL_TOKENS + 1)))
    assert calls == [EVAL_CALL_TOKENS, EVAL_CALL_TOKENS - 1, 2]


def test_load_llama_refuses_calls_too_small_before_loading_anything():
    pytest.importorskip("llama_cpp")
    from react_lab.lab.backends.llama_state import load_llama

    with pytest.raises(ValueError, match="more than 2"):
        load_llama("no-such-file.gguf", n_batch=2)
    with pytest.raises(ValueError, match="more than 2"):
        load_llama("no-such-file.gguf", n_ctx=2)
    # n_ctx 0 is the model's own: the size passes
    with pytest.raises(ValueError, match="no-such-file"):
        load_llama("no-such-file.gguf", n_ctx=0)
