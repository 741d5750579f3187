"""One greedy generation, read as both arms of the forgery experiment.

Under greedy decoding a prompt has one continuation from a given cache state, and a stop
string only decides where the server *cuts* it, never which tokens come before the cut
(llama-cpp-python checks ``stop`` after each token, on the text so far). So the with-stop
completion is the no-stop completion cut at the first stop string, and one generation
serves both arms: :class:`TwoArmReader` reads them off the token stream, exactly where
two separate completions would have ended. :func:`react_lab.lab.experiments.forge.run_experiment`
uses it on the embedded model; ``tests/lab/experiments/test_forge_model.py`` checks it against
two real calls.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

from ... import protocol
from ..._parsing import forgery
from ..agent.parser import find_forged


def settled_forgery(text: str) -> int | None:
    """Where a streamed completion's forged ``Observation`` starts, once no later text undoes it.

    :func:`react_lab.lab.agent.parser.find_forged`'s index, once its line is finished or its label
    complete (:func:`react_lab._parsing.forgery.settled`): ``find_forged(text + more)`` is that
    index for every continuation ``more``; else None.
    """
    return forgery.settled(text, find_forged(text))


@dataclass
class Arm:
    """How one arm's completion ended: its text, finish reason, tokens, and when it was known."""

    text: str
    finish_reason: str  # "stop", "length", or "forged" (no-stop arm ended at the forgery)
    completion_tokens: int
    at: float  # time.perf_counter() when this arm was decided


class TwoArmReader:
    """Read both arms off one greedy token stream, exactly where two completions would end.

    Feed the tokens one by one (:meth:`feed` returns False once both arms are decided)
    and call :meth:`end_of_text` if the model ends its text. The with-stop arm is read as
    ``Llama.create_completion`` reads it, token for token: incomplete UTF-8 held back,
    then the stop check (the first string of ``stop``, in list order, found in the text;
    the text is cut there), then ``max_tokens``. The no-stop arm ends as soon as a
    model-written ``Observation`` line is certain (:func:`settled_forgery`)
    and the with-stop arm is decided: its verdict and ``forged_at`` are then those of the
    whole completion; its finish reason is ``"forged"``. With ``run_to_max`` it runs on to
    ``max_tokens`` (or the end of the text), and ``early`` keeps the record the early end
    would have made.
    """

    def __init__(
        self,
        detokenize: Callable[[list[int]], bytes],
        *,
        max_tokens: int,
        stop: Sequence[str] = protocol.STOP,
        run_to_max: bool = False,
    ):
        self.detokenize, self.stop = detokenize, [s for s in stop if s]
        self.max_tokens, self.run_to_max = max_tokens, run_to_max
        self.tokens: list[int] = []
        self.with_stop: Arm | None = None
        self.without_stop: Arm | None = None
        self.early: Arm | None = None
        self._held = 0  # bytes of an incomplete UTF-8 character still to come

    def _arm(self, text: str, reason: str) -> Arm:
        return Arm(text, reason, len(self.tokens), time.perf_counter())

    def end_of_text(self) -> None:
        """The model wrote its end-of-generation token (not part of the text): both arms end."""
        text = self.detokenize(self.tokens).decode("utf-8", errors="ignore")
        self.with_stop = self.with_stop or self._arm(text, "stop")
        self.without_stop = self._arm(text, "stop")

    def feed(self, token: int) -> bool:
        """Take the next token; return False once both arms are decided."""
        self.tokens.append(token)
        raw = self.detokenize(self.tokens)
        for i, byte in enumerate(raw[-3:]):  # a UTF-8 lead byte among the last three, as
            k = 3 - i  # create_completion reads them (k counted as it does)
            for size, pattern in ((2, 192), (3, 224), (4, 240)):
                if size > k and pattern & byte == pattern:
                    self._held = size - k
        if self._held > 0:  # as create_completion: no stop or length check mid-character
            self._held -= 1
            return True
        text = raw.decode("utf-8", errors="ignore")
        if self.with_stop is None:
            hit = next((s for s in self.stop if s in text), None)
            if hit is not None:
                self.with_stop = self._arm(text[: text.index(hit)], "stop")
        if self.with_stop is not None and self.early is None and settled_forgery(text) is not None:
            self.early = self._arm(text, "forged")
            if not self.run_to_max:
                self.without_stop = self.early
                return False
        if len(self.tokens) >= self.max_tokens:
            self.with_stop = self.with_stop or self._arm(text, "length")
            self.without_stop = self._arm(text, "length")
            return False
        return True

    def tail_tokens(self) -> int:
        """Tokens generated from the first forged ``Observation`` line on (0 if none)."""
        text = self.detokenize(self.tokens).decode("utf-8", errors="ignore")
        at = find_forged(text)
        if at is None:
            return 0
        before = next(
            k
            for k in range(len(self.tokens) + 1)
            if len(self.detokenize(self.tokens[: k + 1]).decode("utf-8", errors="ignore")) > at
        )
        return len(self.tokens) - before
