"""Replay a saved run: the lab's scripted model returns the model's saved completions, in order.

A shipped results file that keeps each step's completion says what the model wrote; run
those completions through today's loop and parser again and the steps should come out as
saved. :class:`ReplayModel` is the model side of such a replay (:class:`ReplayChatModel` for
a chat backend's saved replies), :func:`reading` what is compared in a step and
:func:`run_differences` the comparison of a whole run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from react_lab.lab.backends.base import Completion
from react_lab.lab.backends.chat import ChatReply, tool_call
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.protocol import MAX_TOKENS


class Diverged(Exception):
    """The replay left the saved run: it asked for a step the run does not have.

    Neither ``ValueError`` nor ``RuntimeError``, so no loop or pass records it as the run's
    own error: it reaches the replay.
    """


class ReplayModel:
    """The lab's :class:`ScriptedModel` on one saved run's completions, as the model returned them.

    ``steps`` are the run's saved steps (dicts): each one's ``"completion"`` (the text the
    loop got, after the stop sequence), ``"finish_reason"`` and, where saved,
    ``"prompt_tokens"``, ``"completion_tokens"`` and ``"forged_tokens"``. The scripted model
    applies ``stop`` and ``max_tokens`` as it always does; a completion it would cut
    otherwise than the saved one raises :class:`Diverged`, as does a call past the last
    saved step. The finish reason and the token counts are the saved ones (the parser
    reads a completion cut at the token limit differently).

    A call without a stop sequence is no step of a run (every loop sends the stop): it is
    the pass's one-token warm-up or :class:`~react_lab.lab.experiments.failures.StopProbe`'s
    look past the stop, and gets no text. The saved step already holds what the probe found
    (its ``forged_tokens``), and the probe passes a completion on as it came when its look
    finds no ``Observation`` line.
    """

    def __init__(self, steps: Sequence[dict]):
        self.steps = list(steps)
        texts = [s["completion"] for s in self.steps]
        self.scripted = ScriptedModel(texts or [""], repeat_last=False, name="replay")
        self.given = 0

    def complete(
        self, prompt: str, *, stop: Sequence[str] | None = None, max_tokens: int = MAX_TOKENS
    ) -> Completion:
        if not stop:
            return Completion(text="", finish_reason="stop", prompt_tokens=0, completion_tokens=0)
        if self.given >= len(self.steps):
            raise Diverged(f"the loop asked for step {self.given + 1}; the saved run ends before")
        saved = self.steps[self.given]
        got = self.scripted.complete(prompt, stop=stop, max_tokens=max_tokens)
        self.given += 1
        if got.text != saved["completion"]:
            raise Diverged(
                f"step {self.given}: the scripted model returned {got.text!r}, "
                f"not the saved completion {saved['completion']!r}"
            )
        return replace(
            got,
            finish_reason=saved["finish_reason"],
            prompt_tokens=saved.get("prompt_tokens", got.prompt_tokens),
            completion_tokens=saved.get("completion_tokens", got.completion_tokens),
            forged_tokens=saved.get("forged_tokens", 0),
        )


class ReplayChatModel:
    """A chat backend that returns one saved run's replies, in order, as the backend returned them.

    ``steps`` are the run's saved steps (dicts): each one's ``"completion"`` (the reply's
    content), ``"thought"``, ``"tool_calls"`` (each ``{"id", "name", "arguments"}``, the
    arguments as sent), ``"finish_reason"`` and token counts. A call past the last saved step
    raises :class:`Diverged`.
    """

    def __init__(self, steps: Sequence[dict]):
        self.steps, self.given = list(steps), 0

    def chat(self, messages, *, tools=None, max_tokens: int = MAX_TOKENS, **options) -> ChatReply:
        if self.given >= len(self.steps):
            raise Diverged(f"the loop asked for step {self.given + 1}; the saved run ends before")
        saved = self.steps[self.given]
        self.given += 1
        calls = [tool_call(c["id"], c["name"], c["arguments"]) for c in saved["tool_calls"]]
        return ChatReply(
            content=saved["completion"],
            thought=saved["thought"],
            tool_calls=calls,
            finish_reason=saved["finish_reason"],
            prompt_tokens=saved.get("prompt_tokens", 0),
            completion_tokens=saved.get("completion_tokens", 0),
        )


def error_kind(step: dict) -> str | None:
    """What a step's error is: None, ``"no action read"`` (the loop sent the parser's reason
    back) or ``"call failed"`` (a call was read, and the tool or a guard refused it)."""
    if not step["error"]:
        return None
    return "call failed" if _action(step)["tool"] else "no action read"


def _action(step: dict) -> dict:
    """The step's call, from a :meth:`Step.to_dict` (``"action"``) or a short copy (``"tool"``)."""
    action = step["action"] if "action" in step else {"tool": step["tool"], "args": step["args"]}
    return {"tool": (action or {}).get("tool"), "args": (action or {}).get("args")}


def reading(step: dict) -> dict:
    """What the replay compares in a step: the call (tool, arguments), the error's kind, the
    answer, the guard that acted and, where saved, whether the completion was forged."""
    read = {**_action(step), "error": error_kind(step), "answer": step["answer"]}
    read["guard"] = step["guard"]
    if "forged" in step:
        read["forged"] = step["forged"]
    return json.loads(json.dumps(read))  # tuples and lists alike, as the JSON file has them


def run_differences(saved: dict, replayed: dict) -> list[str]:
    """Where a replayed run differs from the saved one: one line per difference, [] when none.

    Each run is a dict with ``"steps"`` (step dicts), ``"stopped_by"`` and ``"answer"``.
    """
    found = []
    for number, (was, now) in enumerate(zip(saved["steps"], replayed["steps"]), start=1):
        was, now = reading(was), reading(now)
        found += [
            f"step {number} {key}: saved {was[key]!r}, replayed {now[key]!r}"
            for key in was
            if was[key] != now.get(key)
        ]
    if len(saved["steps"]) != len(replayed["steps"]):
        found.append(f"steps: saved {len(saved['steps'])}, replayed {len(replayed['steps'])}")
    found += [
        f"{key}: saved {saved[key]!r}, replayed {replayed[key]!r}"
        for key in ("stopped_by", "answer")
        if saved[key] != replayed[key]
    ]
    return found
