"""Special tokens and tokenizer markers in model text: one regex per kind.

A chat template's special tokens (``<|im_end|>``, ``<｜tool▁calls▁begin｜>``, Gemma's
``<|tool_call>``) reach the text when a server does not strip them; tokenizer markers (``▁``
for a space, ``<0x0A>`` for a byte) reach it when tokens were joined without decoding. The
parser decodes markers first (:func:`decode_markers`), ends an answer at its first
end-of-turn token (:func:`without_end_tokens`), and takes no text holding a piece of call
markup or a special token as an answer (:func:`markup_piece`).
"""

from __future__ import annotations

import re

#: A special token: ``<|...|>`` with either bar (``|`` or the full-width ``｜``), or a token
#: with a bar on one side only (Gemma's ``<|tool_call>`` and ``<tool_call|>``).
SPECIAL_TOKEN = r"<[|\uff5c][^<>\n]{0,60}?[|\uff5c]>|<\|[\w\"]{1,40}>|<[\w\"]{1,40}\|>"
_SPECIAL_TOKEN = re.compile(SPECIAL_TOKEN)

#: Special tokens and reasoning tags: what the thought before a call leaves out.
THOUGHT_TOKENS = re.compile(SPECIAL_TOKEN + r"|</?think>")

#: A piece of call markup or a special token: what no answer ever holds. Every frame the
#: markup readers know (:mod:`react_lab._parsing.formats`), reasoning tags, any special token.
MARKUP_PIECE = re.compile(
    SPECIAL_TOKEN  # <|im_end|>, <|tool_call>, <tool_call|>
    + r"|</?(?:[|\uff5c]DSML[|\uff5c])?(?:tool_calls?|function_calls|TOOLCALL|arg_key|arg_value"
    r"|think|thinking|escape|longcat_tool_call|start_function_call|end_function_call"
    r"|(?:seed|minimax):(?:tool_call|think))>"
    # <function=x>, <invoke name="x">, <parameter=k>
    r"|</?(?:[|\uff5c]DSML[|\uff5c]|[A-Za-z]\w*:)?(?:function|invoke|parameter)\b[^<>\n]{0,100}>"
    r"|\[(?:TOOL_CALLS|ARGS|CALL_ID|TOOL_REQUEST|END_TOOL_REQUEST|/?THINK)\]|\u25c1/?think\u25b7"
    r"|```(?:tool_code|tool_call|python_tool_code)|to=functions\.|functools[ \t]*\["
    r"|</s>|<(?:end|start)_of_turn>"  # end-of-turn tokens
    r"|\[/?INST\]|<</?SYS>>"  # Llama 2 and Mistral's turn markers
)

#: End-of-turn tokens a server may leave at the end of an answer, and the tokens that start
#: the next turn.
END_TOKENS = (
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end|>",
    "<|return|>",
    "<|endoftext|>",
    "</s>",
    "<end_of_turn>",
    "<turn|>",
    "<\uff5cend\u2581of\u2581sentence\uff5c>",
    "<|im_start|>",
    "<|start_header_id|>",
    "<start_of_turn>",
    "<|start|>",
)

_BYTE_TOKEN = re.compile(r"(?:<0x[0-9A-Fa-f]{2}>)+")
_HEX = re.compile(r"[0-9A-Fa-f]{2}")


def markup_piece(text: str) -> str | None:
    """The first piece of call markup or special token in ``text`` (:data:`MARKUP_PIECE`)."""
    m = MARKUP_PIECE.search(text) if isinstance(text, str) else None
    return m.group() if m else None


def without_end_tokens(answer: str) -> str:
    """``answer`` up to its first end-of-turn token (:data:`END_TOKENS`).

    The turn ended there, and what follows is the next turn's
    (``"42<|im_end|>\\n<|im_start|>user"`` is ``"42"``).
    """
    found = (answer.find(token) for token in END_TOKENS)
    cut = min((i for i in found if i >= 0), default=len(answer))
    return answer[:cut].rstrip()


# --------------------------------------------------------------------------- tokenizer markers


def _byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-level alphabet: each byte's character, mapped back to the byte."""
    keep = [*range(33, 127), *range(161, 173), *range(174, 256)]
    moved = [b for b in range(256) if b not in keep]
    return {**{chr(b): b for b in keep}, **{chr(256 + i): b for i, b in enumerate(moved)}}


_BYTE_OF = _byte_alphabet()


def decode_markers(text: str) -> tuple[str, str | None]:
    """Text whose tokens were joined without decoding, decoded; and the marker that was there.

    SentencePiece writes a space as ``▁`` (U+2581) and unknown bytes as ``<0x0A>``;
    byte-level BPE (GPT-2, Llama 3, Qwen) writes a space as ``Ġ`` (U+0120) and a line
    break as ``Ċ`` (U+010A). A text counts as undecoded when its markers outnumber its
    spaces (``▁`` inside special tokens such as ``<｜tool▁sep｜>`` is not counted or
    changed). The marker is ``"U+2581"``, ``"U+0120"`` or None (the text is returned as it is).
    """
    plain = _SPECIAL_TOKEN.sub("", text)
    if plain.count("\u2581") > plain.count(" "):
        parts = _SPECIAL_TOKEN.split(text)
        tokens = _SPECIAL_TOKEN.findall(text)
        out = [_bytes_back(p.replace("\u2581", " ")) for p in parts]
        joined = "".join(o + (tokens[i] if i < len(tokens) else "") for i, o in enumerate(out))
        return joined.lstrip(" ") if text.startswith("\u2581") else joined, "U+2581"
    byte_level = "\u0120" in text or "\u010a" in text
    if byte_level and " " not in text and "\n" not in text and all(c in _BYTE_OF for c in text):
        return bytes(_BYTE_OF[c] for c in text).decode("utf-8", errors="replace"), "U+0120"
    return text, None


def _bytes_back(text: str) -> str:
    """SentencePiece byte tokens (``<0xE2><0x82><0xAC>``) as the characters they encode."""

    def character(m: re.Match) -> str:
        return bytes(int(h, 16) for h in _HEX.findall(m.group())).decode("utf-8", errors="replace")

    return _BYTE_TOKEN.sub(character, text)
