"""Step events and the transcript, rendered so every span shows its owner.

A text-protocol transcript is one growing string, but three parties write it: the
*prompt* (instructions, tools, exemplars, the question), the *model* (thoughts and
actions) and the *loop* (every observation). :class:`Transcript` keeps the owner of
each span so a learner can see who wrote what.
"""
from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

OWNERS = ("prompt", "model", "loop")
_COLOURS = {"prompt": "#6b7280", "model": "#1d4ed8", "loop": "#047857"}
_BACKGROUNDS = {"prompt": "#f3f4f6", "model": "#dbeafe", "loop": "#d1fae5"}


@dataclass
class Step:
    """One step of a run: what the model wrote, what the loop did, what it cost.

    ``action`` is ``{"tool": str, "args": list | dict}`` or None. Token counts are the
    model backend's; ``model_seconds``, ``tool_seconds`` and ``seconds`` (the whole
    step) are wall-clock seconds. ``guard`` names the guard that acted in this step.
    """

    step: int
    thought: str | None = None
    action: dict | None = None
    observation: str | None = None
    error: str | None = None
    answer: str | None = None
    completion: str = ""
    forged: bool = False
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    evaluated_tokens: int | None = None
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    seconds: float = 0.0
    guard: str | None = None

    def to_dict(self) -> dict:
        """A JSON-serialisable dict of every field."""
        return asdict(self)


@dataclass
class Transcript:
    """The growing prompt as ``(owner, text)`` spans; ``text`` is what the model is sent."""

    spans: list[tuple[str, str]] = field(default_factory=list)

    def add(self, owner: str, text: str) -> None:
        """Append ``text`` written by ``owner`` (one of :data:`OWNERS`)."""
        if owner not in OWNERS:
            raise ValueError(f"owner must be one of {OWNERS}, not {owner!r}")
        if text:
            self.spans.append((owner, text))

    @property
    def text(self) -> str:
        return "".join(t for _, t in self.spans)

    def chars_by_owner(self) -> dict[str, int]:
        """Characters written by each owner."""
        out = dict.fromkeys(OWNERS, 0)
        for owner, t in self.spans:
            out[owner] += len(t)
        return out

    def render_text(self, *, show_prompt: bool = False) -> str:
        """Plain text with an owner tag on every line, e.g. ``[model] Thought: ...``.

        The prompt prefix is shown as one summary line unless ``show_prompt``.
        """
        lines = []
        for owner, t in self.spans:
            if owner == "prompt" and not show_prompt:
                q = [ln for ln in t.splitlines() if ln.startswith("Question:")]
                lines.append(f"[prompt] ({len(t)} characters of instructions, tools and exemplars)")
                lines += [f"[prompt] {q[-1]}"] if q else []
                continue
            lines += [f"[{owner:>6}] {ln}" for ln in t.strip("\n").splitlines()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return self.render_html()

    def render_html(self, *, show_prompt: bool = False) -> str:
        """HTML with each span coloured by owner and a legend; for notebooks."""
        legend = " ".join(
            f'<span style="background:{_BACKGROUNDS[o]};color:{_COLOURS[o]};padding:0 4px">'
            f"{o}</span>" for o in OWNERS)
        body = []
        for owner, t in self.spans:
            if owner == "prompt" and not show_prompt:
                q = [ln for ln in t.splitlines() if ln.startswith("Question:")]
                t = f"… {len(t)} characters of prompt prefix …\n" + (q[-1] + "\n" if q else "")
            body.append(f'<span title="written by the {owner}" style="background:{_BACKGROUNDS[owner]};'
                        f'color:{_COLOURS[owner]}">{html.escape(t)}</span>')
        return (f'<div style="font-size:90%">written by: {legend}</div>'
                f'<pre style="white-space:pre-wrap;line-height:1.35">{"".join(body)}</pre>')


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> Path:
    """Append one JSON object per line to ``path``; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    return path


def read_jsonl(path: str | Path) -> list[dict]:
    """Read a JSONL file back into a list of dicts (blank lines skipped)."""
    with Path(path).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
