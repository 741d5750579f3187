"""The HTML tables and highlighted text the notebooks show, built from plain rows.

Plain functions of rows and strings, so each is tested without a notebook.
"""

from __future__ import annotations

import html
import json
from typing import Iterable, Sequence

from ..agent.parser import find_forged
from ..agent.trace import OWNERS, Transcript
from ..experiments.abuses import Outcome

#: Each owner's text colour and background in a transcript
#: (:data:`react_lab.lab.agent.trace.OWNERS`).
OWNER_COLOURS = {"prompt": "#6b7280", "model": "#1d4ed8", "loop": "#047857"}
OWNER_BACKGROUNDS = {"prompt": "#f3f4f6", "model": "#dbeafe", "loop": "#d1fae5"}

OUTCOME_COLOURS = {
    "wrong_call": "#fecaca",
    "type_error": "#fed7aa",
    "rejected": "#bbf7d0",
    "impossible": "#bfdbfe",
    "ok": "#e5e7eb",
}


_HEADERS = {
    "regex": "regex + comma split (classic loop)",
    "schema": "JSON Schema validation",
    "grammar": "schema-constrained decoding",
}


def outcome_table(outcomes: list[Outcome]) -> str:
    """Render outcomes as an HTML table: one row per abuse, one column per defence."""
    abuses = list(dict.fromkeys(o.abuse for o in outcomes))
    defences = list(dict.fromkeys(o.defence for o in outcomes))
    cells = {(o.abuse, o.defence): o for o in outcomes}
    head = "".join(
        f"<th style='text-align:left'>{html.escape(_HEADERS.get(d, d))}</th>" for d in defences
    )
    rows = []
    for a in abuses:
        tds = []
        for d in defences:
            o = cells.get((a, d))
            if o is None:
                tds.append("<td></td>")
                continue
            tds.append(
                f"<td style='text-align:left;background:{OUTCOME_COLOURS.get(o.outcome, '#fff')}'>"
                f"<b>{o.outcome}</b><br><small>{html.escape(o.detail)}</small></td>"
            )
        rows.append(f"<tr><th style='text-align:left'>{html.escape(a)}</th>{''.join(tds)}</tr>")
    return f"<table><thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


FORGED_LINE_STYLE = "background:#fecaca;color:#7f1d1d;font-weight:bold"


FORGED_AFTER_STYLE = "background:#fef3c7;color:#78350f"


def highlight_forged(text: str) -> str:
    """Render a completion as HTML in a ``<pre>``, marking the forged span.

    Every model-written ``Observation`` line is a ``<mark class="forged-observation">``;
    everything else after the first one (what the model went on to reason from its own
    fiction) is a ``<mark class="forged-after">``. Text before it is left plain. All
    model text is HTML-escaped.
    """
    cut = find_forged(text)
    parts = [html.escape(text if cut is None else text[:cut])]
    pos = cut
    while pos is not None:
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end < 0 else line_end
        parts.append(
            f'<mark class="forged-observation" style="{FORGED_LINE_STYLE}">'
            f"{html.escape(text[pos:line_end])}</mark>"
        )
        nxt = find_forged(text[line_end:])
        after_end = len(text) if nxt is None else line_end + nxt
        if after_end > line_end:
            parts.append(
                f'<mark class="forged-after" style="{FORGED_AFTER_STYLE}">'
                f"{html.escape(text[line_end:after_end])}</mark>"
            )
        pos = None if nxt is None else after_end
    return (
        '<pre style="white-space:pre-wrap;font-size:12px;line-height:1.4">'
        + "".join(parts)
        + "</pre>"
    )


#: How :func:`run_html` marks what the loop wrote (what the model wrote is left plain).
LOOP_STYLE = "background:#d1fae5;color:#065f46"


def run_spans(transcript: str, completions: Sequence[str]) -> list[tuple[str, str]] | None:
    """Split a run's transcript into ``(owner, text)`` spans: prompt, then model and loop in turn.

    ``completions`` are the texts the model wrote, in order (a text-protocol loop appends
    each one as it is, then what the loop itself writes). Returns None when they are not
    found in that order.
    """
    if not completions:
        return None
    start = transcript.find(completions[0])
    if start < 0:
        return None
    spans, at = [("prompt", transcript[:start])], start
    for i, text in enumerate(completions):
        if transcript[at : at + len(text)] != text:
            return None
        spans.append(("model", text))
        at += len(text)
        end = (
            transcript.find(completions[i + 1], at) if i + 1 < len(completions) else len(transcript)
        )
        if end < 0:
            return None
        if end > at:
            spans.append(("loop", transcript[at:end]))
        at = end
    return spans


def run_html(transcript: str, completions: Sequence[str]):
    """A run from its question on, as an ``IPython.display.HTML`` object a cell shows.

    What the model wrote is plain, with every ``Observation`` line it wrote itself marked
    red (:func:`highlight_forged`); what the loop wrote is green. The run is shown up to the
    end of the line holding the first ``Answer:`` (where a loop returns), then ``…`` if the
    model wrote more. Without the completions in order (:func:`run_spans` returns None),
    the whole tail is :func:`highlight_forged`.
    """
    from IPython.display import HTML  # the notebooks' only: not imported with this module

    spans = run_spans(transcript, completions)
    if spans is None:
        return HTML(highlight_forged(transcript[transcript.rfind("Question:") :]))
    prompt = spans[0][1]
    parts = [html.escape(prompt[prompt.rfind("Question:") :])]
    for owner, text in spans[1:]:
        if owner == "model":
            answer = text.find("Answer:")
            newline = -1 if answer < 0 else text.find("\n", answer)
            end = len(text) if newline < 0 else newline  # the answer's line, where the loop returns
            parts.append(highlight_forged(text[:end]).split(">", 1)[1].rsplit("</pre>", 1)[0])
            if end < len(text):
                parts.append(" …")
                break
        else:
            parts.append(
                f'<span title="written by your loop" style="{LOOP_STYLE}">'
                f"{html.escape(text)}</span>"
            )
    return HTML(
        '<pre style="white-space:pre-wrap;font-size:12px;line-height:1.4">'
        + "".join(parts)
        + "</pre>"
    )


def html_table(
    rows: Iterable[dict], columns: Iterable[str] | None = None, *, max_chars: int = 60
) -> str:
    """Render dicts as an HTML table (no pandas); cells are escaped and cut at ``max_chars``.

    ``columns`` defaults to the keys of the first row. Floats show three significant
    digits, or whole numbers with thousands commas from 100 up.
    """
    rows = list(rows)
    columns = list(columns or (rows[0] if rows else []))

    def cell(value) -> str:
        if isinstance(value, float):
            value = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
        elif not isinstance(value, str) and value is not None:
            value = json.dumps(value, ensure_ascii=False, default=str)
        text = "" if value is None else value
        text = text if len(text) <= max_chars else text[: max_chars - 1] + "…"
        return f"<td style='text-align:left'>{html.escape(text)}</td>"

    head = "".join(f"<th style='text-align:left'>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(cell(r.get(c)) for c in columns) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_columns(columns: dict[str, list[tuple[str, str]]]) -> str:
    """Render texts side by side: ``{title: [(owner, text), ...]}`` as HTML columns.

    Each span is coloured by its owner (:data:`OWNERS`), as :func:`transcript_html`
    colours a transcript; text is escaped. For comparing two prompts and their completions.
    """
    cells = []
    for title, spans in columns.items():
        body = "".join(
            f'<span style="background:{OWNER_BACKGROUNDS[o]};color:{OWNER_COLOURS[o]}">'
            f"{html.escape(t)}</span>"
            for o, t in spans
        )
        cells.append(
            f"<td style='vertical-align:top;text-align:left;width:{100 // len(columns)}%'>"
            f"<b>{html.escape(title)}</b><pre style='white-space:pre-wrap'>{body}</pre></td>"
        )
    return f"<table style='width:100%'><tr>{''.join(cells)}</tr></table>"


def transcript_html(transcript: Transcript, *, show_prompt: bool = False) -> str:
    """A transcript as HTML, each span coloured by its owner, with a legend; for notebooks.

    The prompt prefix is shown as one summary line (and its question) unless ``show_prompt``;
    text is escaped. :func:`transcript_text` is the plain-text view.
    """
    legend = " ".join(
        f'<span style="background:{OWNER_BACKGROUNDS[o]};color:{OWNER_COLOURS[o]};padding:0 4px">'
        f"{o}</span>"
        for o in OWNERS
    )
    body = []
    for owner, t in transcript.spans:
        if owner == "prompt" and not show_prompt:
            q = [ln for ln in t.splitlines() if ln.startswith("Question:")]
            t = f"… {len(t)} characters of prompt prefix …\n" + (q[-1] + "\n" if q else "")
        body.append(
            f'<span title="written by the {owner}" style="background:{OWNER_BACKGROUNDS[owner]};'
            f'color:{OWNER_COLOURS[owner]}">{html.escape(t)}</span>'
        )
    return (
        f'<div style="font-size:90%">written by: {legend}</div>'
        f'<pre style="white-space:pre-wrap;line-height:1.35">{"".join(body)}</pre>'
    )


def transcript_text(transcript: Transcript, *, show_prompt: bool = False) -> str:
    """A transcript as plain text with an owner tag on every line, e.g. ``[model] Thought: ...``.

    The prompt prefix is shown as one summary line unless ``show_prompt``; the CLI prints
    this view, :func:`transcript_html` is the notebooks'.
    """
    lines = []
    for owner, t in transcript.spans:
        if owner == "prompt" and not show_prompt:
            q = [ln for ln in t.splitlines() if ln.startswith("Question:")]
            lines.append(f"[prompt] ({len(t)} characters of instructions, tools and exemplars)")
            lines += [f"[prompt] {q[-1]}"] if q else []
            continue
        lines += [f"[{owner:>6}] {ln}" for ln in t.strip("\n").splitlines()]
    return "\n".join(lines)
