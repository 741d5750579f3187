"""Reasoning blocks in model text: set aside before any label or call is read.

Reasoning models write a draft before they act: ``<think>...</think>`` (Qwen3, DeepSeek R1
and most open reasoning models), ``<thinking>`` (Claude-style prompts), Seed-OSS's
``<seed:think>``, Magistral's ``[THINK]``, Kimi-VL's ``◁think▷``, Gemma 4's thought channel
(``<|channel>...<channel|>``), or a Harmony message on the analysis channel (gpt-oss). What
is in a draft is never an action and never an answer: both loops set it aside first
(:func:`set_aside_reasoning`) and keep it as the step's reasoning.
"""

from __future__ import annotations

import re

#: Reasoning blocks, a row each: the opening tag, its closing tag, and what the block is called
#: in a refusal (None: "a reasoning block").
REASONING = (
    ("<think>", "</think>", None),
    ("<thinking>", "</thinking>", None),
    ("<seed:think>", "</seed:think>", None),
    ("[THINK]", "[/THINK]", None),
    ("\u25c1think\u25b7", "\u25c1/think\u25b7", None),
    ("<|channel>", "<channel|>", "Gemma 4's thought channel"),
)
_CLOSES = {opening: (closing, name or "a reasoning block") for opening, closing, name in REASONING}
#: Any closing tag of the family, however spelled: ``</thinking>`` after ``<think>``,
#: ``</think >``, ``</Think>``, ``</seed:think>``: each ends the block that is open.
_ANY_CLOSE = (
    r"</[ \t]*(?:\w+:)?(?:think|thinking|thought)[ \t]*>|\[/THINK\]|\u25c1/think\u25b7|<channel\|>"
)
#: A reasoning tag, open or close, or the header of a Harmony message on the analysis channel.
_REASONING_TAG = re.compile(
    "|".join(re.escape(t) for t in _CLOSES)
    + "|(?P<close>(?i:"
    + _ANY_CLOSE
    + r"))|(?P<analysis>(?:<\|start\|>[ \t]*assistant[ \t]*)?<\|channel\|>[ \t]*analysis\b"
    r"[^<\n]{0,100}<\|message\|>)"
)
_CLOSE = re.compile(_ANY_CLOSE, re.IGNORECASE)
_ANALYSIS_END = re.compile(r"<\|end\|>|(?=<\|start\|>|<\|channel\|>)")


def set_aside_reasoning(text: str) -> tuple[str, str | None, str | None]:
    """``text`` without its reasoning blocks; what they held; and what they were, in words.

    A reasoning block is the text between reasoning tags (``<think>...</think>`` and the
    others of :data:`REASONING`) or a Harmony message on the analysis channel
    (``<|channel|>analysis<|message|>...<|end|>``). A block is closed by its own closing tag
    or, when that is not in the text, by the family's next one however spelled
    (``<think>...</thinking>``, ``</think >``). A closing tag whose opener is not in
    the text (a chat template that writes ``<think>`` into the prompt) closes a block that
    began where the text did, or after the block before it; an opener never closed opens one
    that runs to the end when it starts a line (mid-line, never closed, it is text: an
    argument's value ``<a_a><a>[THINK]</a></a_a>``). What is in a block is a draft: never an
    action, never an answer.
    Returns ``(text, None, None)`` when there is none, the text unchanged. The words say what
    was set aside (``"a reasoning block (<think>...</think>)"``, ``"a reasoning block opened
    with <think> and never closed"``, ``"Harmony's analysis channel"``). Linear; never raises.
    """
    kept, drafts, kinds, pos = [], [], [], 0
    for _ in range(1000):
        m = _REASONING_TAG.search(text, pos)
        if m is None:
            break
        opens = m.group("close") is None
        kept.append(text[pos : m.start()] if opens else "")
        if m.group("analysis"):
            end = _ANALYSIS_END.search(text, m.end())
            drafts.append(text[m.end() : end.start() if end else len(text)])
            kinds.append("Harmony's analysis channel")
            pos = end.end() if end else len(text)
        elif opens:
            closing, name = _CLOSES[m.group()]
            at = text.find(closing, m.end())
            close = _CLOSE.search(text, m.end()) if at < 0 else None  # spelled another way
            end, after = (at, at + len(closing)) if at >= 0 else (None, None)
            if close is not None:
                end, after = close.span()
            elif at < 0 and text[: m.start()].rpartition("\n")[2].strip():
                kept.pop()  # never closed, and mid-line (a value, `<a>[THINK]</a>`): text
                break
            drafts.append(text[m.end() : end])
            if at >= 0:
                kinds.append(f"{name} ({m.group()}...{closing})")
            elif close is not None:
                kinds.append(f"{name} opened with {m.group()} and closed by {close.group()}")
            else:
                kinds.append(f"{name} opened with {m.group()} and never closed")
            pos = len(text) if after is None else after
        else:  # a closing tag with no opener: the block ran from the start (or the last block)
            drafts.append(text[pos : m.start()])
            kinds.append(f"a reasoning block closed by {m.group()} (its opener not written)")
            pos = m.end()
    if not kinds:
        return text, None, None
    kept.append(text[pos:])
    reasoning = "\n".join(d.strip() for d in drafts if d.strip()) or None
    return "".join(kept).lstrip(), reasoning, ", ".join(dict.fromkeys(kinds))
