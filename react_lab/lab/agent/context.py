"""Context control: compact a run's older steps into a summary once it grows past a token limit.

Every step re-sends the whole transcript, so a long run fills the context window.
Truncation (:class:`react_lab.lab.agent.guards.Guards`' ``observation_chars``) keeps one observation
small; compaction, here, keeps the whole run small: once the transcript passes
``guards.compact_at`` tokens, all but the last ``guards.keep_last`` steps become one
summary the loop writes. The prompt (instructions, tools, question) is never touched.

How a step is summarised decides what the model can still use: :func:`keep_ids_summary`
keeps error text and every id; the lab's :func:`react_lab.lab.guards.naive_summary` keeps
the first characters and loses the id a later step needs (bench notebook 07 shows the
difference).
"""

from __future__ import annotations

import re
from typing import Callable

from ...cost import count_tokens
from ...tools import ID_RE

#: How a compacted tool message starts (native loop).
COMPACTED = "(compacted by the loop)"

#: A data marker, opening or closing, around tool output (the lab's ``mark_data``,
#: :mod:`react_lab.lab.guards`): not part of what a summary keeps.
MARKERS = re.compile(r"<</?data[^<>]*>>")


def compact_transcript(transcript, guards) -> bool:
    """Replace older steps with a summary once the transcript passes ``guards.compact_at`` tokens.

    Tokens are counted with ``guards.count`` (default: cl100k_base). The prompt span
    (instructions, tools, question) is pinned; the last ``guards.keep_last`` steps stay
    verbatim; older ones become ``guards.summarize`` (default :func:`keep_ids_summary`)
    of their observations. Returns True if it compacted.
    """
    if guards.compact_at is None:
        return False
    count = guards.count or _default_count()
    if count(transcript.text) <= guards.compact_at:
        return False
    return compact(transcript, guards.summarize or keep_ids_summary, keep_last=guards.keep_last)


def compact_messages(messages: list[dict], guards) -> bool:
    """The native loop's :func:`compact_transcript`: summarise old tool results in a message list.

    Once the messages' contents pass ``guards.compact_at`` tokens, every ``tool`` message
    before the last ``guards.keep_last`` assistant turns gets ``summarize(content)`` (default
    :func:`keep_ids_summary`: error text verbatim, else every id). The system message,
    the question and the calls themselves stay as they were. Returns True if any
    message changed.
    """
    if guards.compact_at is None:
        return False
    count = guards.count or _default_count()
    if count("\n".join(str(m.get("content") or "") for m in messages)) <= guards.compact_at:
        return False
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    if len(turns) <= guards.keep_last:
        return False
    cutoff = turns[-guards.keep_last] if guards.keep_last else len(messages)
    summarize, changed = guards.summarize or keep_ids_summary, False
    for m in messages[:cutoff]:
        if m["role"] == "tool" and not str(m.get("content")).startswith(COMPACTED):
            m["content"], changed = f"{COMPACTED} {summarize(str(m.get('content')))}", True
    return changed


def keep_ids_summary(observation: str) -> str:
    """Summarise an observation: error text verbatim, else its size and every id, in order.

    Ids are the billing data's (:data:`react_lab.tools.ID_RE`: ``cus_``, ``INV-``,
    ``ch_``, ``KB-``, ``sup_``). The prose and numbers are dropped.
    """
    text = MARKERS.sub("", observation).strip()
    if text.startswith("Error:"):
        return text
    ids = list(dict.fromkeys(ID_RE.findall(text)))
    return f"({len(text)} characters summarised) ids: {', '.join(ids) if ids else 'none'}"


def compact(
    transcript, summarize: Callable[[str], str] = keep_ids_summary, *, keep_last: int = 2
) -> bool:
    """Replace all but the last ``keep_last`` steps of ``transcript`` with one summary span.

    Each old step keeps its ``Action:`` (or ``Answer:``) line verbatim and its observation
    becomes ``summarize(observation)``; thoughts are dropped. The prompt span stays first.
    The summary is written by the loop (kind ``"summary"``) and ends in ``Thought:`` like
    any observation. Returns False when there are not more than ``keep_last`` steps.
    """
    head, rest = transcript.spans[:1], list(zip(transcript.spans[1:], transcript.kinds[1:]))
    groups: list[list[tuple[tuple[str, str], str | None]]] = [[]]
    for span, kind in rest:
        if span[0] == "model" and groups[-1]:
            groups.append([])
        groups[-1].append((span, kind))
    groups = [g for g in groups if g]
    old, recent = (
        groups[:-keep_last] if keep_last else groups,
        groups[-keep_last:] if keep_last else [],
    )
    steps_in_old = sum(1 for g in old if g[0][0][0] == "model")
    if steps_in_old == 0 or (steps_in_old == 1 and not recent):
        return False
    lines = [" (the loop compacted the earlier steps to save context)"]
    for group in old:
        for (owner, text), kind in group:
            if owner == "model":
                lines += [
                    ln.strip() for ln in text.splitlines() if re.match(r"\s*(Action|Answer)\b", ln)
                ][:1]
            elif kind == "summary":
                lines += text.split("\n")[1:-1]  # an earlier summary, carried over
            else:
                for obs in re.findall(r"Observation: (.*?)(?:\nThought:|$)", text, re.S):
                    lines.append(f"Observation: {summarize(obs.strip())}")
    kept = [item for g in recent for item in g]
    transcript.spans = head + [("loop", "\n".join(lines) + "\nThought:")] + [s for s, _ in kept]
    transcript.kinds = transcript.kinds[:1] + ["summary"] + [k for _, k in kept]
    return True


def _default_count() -> Callable[[str], int]:
    """cl100k_base token counts (offline), or characters / 4 if the encoding is unavailable."""
    try:
        count_tokens("probe")
        return count_tokens
    except Exception:  # noqa: BLE001 -- a missing encoding file must not stop the loop
        return lambda text: len(text) // 4
