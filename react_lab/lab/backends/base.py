"""What every completion backend shares: the :class:`Completion` it returns, ``stop`` as providers apply it, the chat rendering.

Every backend answers the same call, ``model.complete(prompt, stop=[...], max_tokens=N)``,
and returns a :class:`Completion`: the text, the finish reason, and the prompt and
completion token counts *as that backend's tokenizer counts them*. The text protocol
needs nothing more: a string in, a string out, and a stop sequence. The backends are
:mod:`react_lab.lab.backends.local` (the embedded model), :mod:`react_lab.lab.backends.endpoints`
(any OpenAI-compatible server) and :mod:`react_lab.lab.backends.scripted`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from ...schema import decode_arguments


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
        raise ValueError(f"unknown chat template {template!r}; use one of {', '.join(CHAT_TEMPLATES)}")
    at = prompt.find("\n\nQuestion: ")
    end = prompt.find("\n", at + 2) if at >= 0 else -1
    head, tail = (prompt[:end], prompt[end + 1:]) if end >= 0 else (prompt, "")
    return (f"<|im_start|>user\n{head.strip()}<|im_end|>\n"
            f"<|im_start|>assistant\n{tail}")


#: The ``tool_choice`` strings (the OpenAI parameter's); a dict names one tool.
TOOL_CHOICES = ("auto", "required", "none")


# --------------------------------------------------------------------------- tool_choice

def check_tool_choice(tool_choice: str | dict, tools: Sequence[dict]) -> str | None:
    """Check an OpenAI ``tool_choice`` against the offered tool schemas; return the tool it forces.

    ``"auto"`` (call or answer), ``"required"`` (a call), ``"none"`` (an answer) give None;
    ``{"type": "function", "function": {"name": NAME}}`` gives ``NAME`` (a call to that
    tool). Raises ValueError for anything else, for a name no offered tool has, and for
    ``"required"`` or a named tool with no tools offered (the OpenAI API refuses those too).
    """
    if tool_choice in TOOL_CHOICES:
        if tool_choice == "required" and not tools:
            raise ValueError('tool_choice "required" needs at least one tool')
        return None
    name = tool_choice.get("function", {}).get("name") if isinstance(tool_choice, dict) else None
    if not isinstance(name, str) or tool_choice.get("type") != "function":
        raise ValueError('tool_choice must be "auto", "required", "none" or {"type": "function", '
                         f'"function": {{"name": "<a tool>"}}}}, not {tool_choice!r:.80}')
    names = [t["function"]["name"] for t in tools]
    if name not in names:
        raise ValueError(f"tool_choice names {name!r}, which is not among the tools offered: "
                         f"{', '.join(names) or 'none'}")
    return name


def assistant_json(msg: dict) -> str:
    """Render an assistant message back into the JSON reply form the grammar produces."""
    calls = msg.get("tool_calls") or []
    if not calls:
        return json.dumps({"thought": msg.get("thought") or "", "answer": msg.get("content") or ""},
                          ensure_ascii=False)
    items = [{"name": c["function"]["name"], "arguments": decode_arguments(c["function"]["arguments"])}
             for c in calls]
    return json.dumps({"thought": msg.get("content") or "", "tool_calls": items},
                      ensure_ascii=False)
