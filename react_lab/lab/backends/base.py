"""What every completion backend shares.

The :class:`Completion` it returns, ``stop`` as providers apply it, the chat rendering.

Every backend answers the same call, ``model.complete(prompt, stop=[...], max_tokens=N)``,
and returns a :class:`Completion`: the text, the finish reason, and the prompt and
completion token counts *as that backend's tokenizer counts them*. The text protocol
needs nothing more: a string in, a string out, and a stop sequence. The backends are
:mod:`react_lab.lab.backends.local` (the embedded model), :mod:`react_lab.lab.backends.endpoints`
(any OpenAI-compatible server) and :mod:`react_lab.lab.backends.scripted`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence


@dataclass
class Completion:
    """One model completion.

    ``finish_reason`` follows the OpenAI completions API: ``"stop"`` (a stop string was
    hit, or the model ended its text) or ``"length"`` (``max_tokens`` ran out).
    Token counts are the backend's own; ``seconds`` is wall-clock time of the call.
    ``evaluated_tokens``: prompt tokens the backend actually ran through the network (a
    local model reuses its cache for a shared prefix); None where it cannot tell.

    ``stop_mode`` says who applied the stop sequence: ``"server"`` (sent as ``stop``),
    ``"client"`` (the provider refused ``stop``; the text was cut here, see
    :meth:`OpenAIModel.complete`) or None (no stop asked for, or an in-process backend).
    ``forged_tokens`` counts completion tokens generated (and billed) from a model-written
    ``Observation`` on, that the client cut off; ``cut_text`` is that text.
    """

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float = 0.0
    evaluated_tokens: int | None = None
    raw: Any = field(default=None, repr=False)
    stop_mode: str | None = None
    forged_tokens: int = 0
    cut_text: str = field(default="", repr=False)


def apply_stop(text: str, stop: Sequence[str] | None) -> tuple[str, bool]:
    """Cut ``text`` at the earliest occurrence of any stop string, as providers do.

    Returns ``(text_before_stop, hit)``. The stop string itself is not returned.
    """
    if not stop:
        return text, False
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    if cut < 0:
        return text, False
    return text[:cut], True


#: The chat templates :func:`render_chat` knows: ChatML (SmolLM2's, Qwen's, ...) or none.
CHAT_TEMPLATES = ("chatml", "none")
CHAT_TEMPLATE_ENV = "REACT_LAB_CHAT_TEMPLATE"


def render_chat(prompt: str, template: str = "chatml") -> str:
    """Wrap a plain text-protocol prompt in a chat template, the assistant turn left open.

    The one rendering of the text protocol for a chat-tuned model, used in-process
    (:meth:`LocalModel.render`) and over HTTP (:class:`OpenAIModel`, which sends the
    rendered string to ``/v1/completions``), so both give the model the same prompt.
    SmolLM2-Instruct was tuned on ChatML turns, so everything up to the end of the real
    question's line (the first ``Question:`` after a blank line; exemplars' questions
    follow an ``Example:`` header) becomes one user turn, and the rest (the loop's
    ``Thought:`` and the run so far) an open assistant turn that the model continues.
    This is still a completion: one string in, the next characters out.
    ``template="none"`` returns ``prompt`` unchanged. Raises ``ValueError`` for a
    template not in :data:`CHAT_TEMPLATES`.
    """
    if template == "none":
        return prompt
    if template != "chatml":
        raise ValueError(
            f"unknown chat template {template!r}; use one of {', '.join(CHAT_TEMPLATES)}"
        )
    at = prompt.find("\n\nQuestion: ")
    end = prompt.find("\n", at + 2) if at >= 0 else -1
    head, tail = (prompt[:end], prompt[end + 1 :]) if end >= 0 else (prompt, "")
    return f"<|im_start|>user\n{head.strip()}<|im_end|>\n<|im_start|>assistant\n{tail}"
