"""Scripted backends.

Fixed completions with ``stop`` applied as a provider applies it, and teacher forcing.

:class:`ScriptedModel` replays fixed completions (cut at the first stop string, stop
string not returned, ``finish_reason="stop"``); :class:`ForcedModel` wraps a real backend
so the real model reads every prompt (real token counts) while the text comes from a
script. The scripted chat backend of native tool calling is
:class:`react_lab.lab.backends.chat.ScriptedChatModel`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

from ...protocol import MAX_TOKENS
from ..agent.checks import check_count
from .base import Completion, apply_stop


class ScriptedModel:
    """Replay fixed completions, applying ``stop`` exactly as a provider does.

    ``completions`` is a list of strings, one per call. When the script runs out the
    last entry repeats (``repeat_last=True``) or ``IndexError`` is raised. Token
    counts are whitespace-separated word counts, clearly not a real tokenizer's.
    ``prompts`` keeps every prompt received, for tests.
    """

    def __init__(
        self, completions: Sequence[str], *, repeat_last: bool = True, name: str = "scripted"
    ):
        if isinstance(completions, (str, bytes)):  # one string: each letter would be a completion
            raise TypeError(
                "completions must be a list of strings, one per model call; got one string: "
                f"write [{completions!r:.40}]"
            )
        if not completions:
            raise ValueError("a scripted model needs at least one completion")
        wrong = [c for c in completions if not isinstance(c, str)]
        if wrong:
            bad = wrong[0]
            raise TypeError(
                f"each completion must be a string (the model's text), got "
                f"{type(bad).__name__} {bad!r:.40}"
            )
        self.completions = list(completions)
        self.repeat_last = repeat_last
        self.prompts: list[str] = []
        self.calls = 0
        self.name = name

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> "ScriptedModel":
        """Load ``["...", ...]`` or ``{"completions": ["...", ...]}`` from a JSON file.

        The list holds one completion string per model call, at least one. Raises
        ``ValueError`` when the file is not JSON of that shape; ``FileNotFoundError``,
        ``IsADirectoryError`` or ``PermissionError`` when it cannot be read.
        """
        shape = 'a JSON list of strings, one completion per call, or {"completions": [...]}'
        path = Path(path)
        if path.is_dir():
            raise IsADirectoryError(
                f"{path} is a directory; a scripted model needs a file holding {shape}"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise ValueError(f"{path}: not JSON ({exc}); expected {shape}") from None
        items = data.get("completions") if isinstance(data, dict) else data
        if not isinstance(items, list) or not items or not all(isinstance(x, str) for x in items):
            raise ValueError(f"{path}: expected {shape}")
        return cls(items, name=f"scripted:{path.name}")

    def count_tokens(self, text: str) -> int:
        """Count ``text`` as this model counts tokens: whitespace-separated words."""
        return len(text.split())

    def complete(
        self, prompt: str, *, stop: Sequence[str] | None = None, max_tokens: int = MAX_TOKENS
    ) -> Completion:
        """Replay the next completion, cut at ``stop``, then to ``max_tokens`` words.

        Raises ``ValueError`` if ``max_tokens`` is not a whole number >= 1 (the call is
        not counted), ``IndexError`` when the script is spent and ``repeat_last`` is False.
        """
        check_count("max_tokens", max_tokens)
        if self.calls >= len(self.completions) and not self.repeat_last:
            raise IndexError(f"scripted model has only {len(self.completions)} completions")
        full = self.completions[min(self.calls, len(self.completions) - 1)]
        self.calls += 1
        self.prompts.append(prompt)
        text, hit = apply_stop(full, stop)
        words = text.split()
        reason = "stop"
        if len(words) > max_tokens:  # emulate the token limit on words
            text, reason = " ".join(words[:max_tokens]), "length"
        return Completion(
            text=text,
            finish_reason=reason,
            prompt_tokens=len(prompt.split()),
            completion_tokens=len(text.split()),
        )


class ForcedModel:
    """Send every prompt to a real model, but answer from a script (teacher forcing).

    The wrapped model (``inner``) reads each prompt and writes one token that is thrown
    away, so ``prompt_tokens`` and ``evaluated_tokens`` are its real numbers; the text is
    the next of ``completions`` (the last one repeats), counted with
    ``inner.count_tokens``. Use it to get a run of a known number of steps, with real
    token accounting, from a model that would stop early.
    """

    def __init__(self, model, completions: Sequence[str]):
        if not completions:
            raise ValueError("a forced model needs at least one completion")
        self.inner, self.completions, self.calls = model, list(completions), 0

    @property
    def name(self) -> str:
        return f"forced:{self.inner.name}"

    def complete(
        self, prompt: str, *, stop: Sequence[str] | None = None, max_tokens: int = MAX_TOKENS
    ) -> Completion:
        real = self.inner.complete(prompt, stop=stop, max_tokens=1)
        text = self.completions[min(self.calls, len(self.completions) - 1)]
        self.calls += 1
        return Completion(
            text=text,
            finish_reason="stop",
            prompt_tokens=real.prompt_tokens,
            completion_tokens=self.inner.count_tokens(text),
            seconds=real.seconds,
            evaluated_tokens=real.evaluated_tokens,
        )
