"""HTML views of transcripts for the notebooks."""

from react_lab.lab.agent.trace import Transcript
from react_lab.lab.notebook.tables import html_columns, transcript_html, transcript_text


def test_html_columns_puts_each_text_in_its_own_escaped_column():
    out = html_columns({"raw": [("prompt", "Q <x>"), ("model", " a")], "chat": [("model", "b")]})
    assert out.count("<td") == 2 and "&lt;x&gt;" in out and "<b>chat</b>" in out
    assert "#dbeafe" in out  # the model's colour, as in transcript_html


def _three_owners(prompt: str) -> Transcript:
    """A transcript with a span of each owner: ``prompt``, an action, an observation."""
    t = Transcript()
    t.add("prompt", prompt)
    t.add("model", "Thought: x\nAction: a[b]\n")
    t.add("loop", "Observation: <b>\n")
    return t


def test_transcript_html_colours_each_owner_and_escapes_the_text():
    t = _three_owners("Instructions.\nQuestion: q\n")
    out = transcript_html(t)
    assert "&lt;b&gt;" in out and "<b>" not in out
    assert 'title="written by the model" style="background:#dbeafe;color:#1d4ed8"' in out
    assert "characters of prompt prefix" in out and "Question: q" in out
    assert "Instructions." not in out and "Instructions." in transcript_html(t, show_prompt=True)
    assert out.startswith('<div style="font-size:90%">written by: ')


# --------------------------------------------------------------------------- a run's owners

PROMPT = "Answer the question.\nQuestion: Was it paid?\nThought:"
FORGES = ' I check.\nAction: get_payments[INV-2291]\nObservation: {"paid": true}\nThought: t'
LOOPS = '\nObservation: {"payments": []}\nThought:'
ANSWERS = " It is paid.\nAnswer: Yes.\n\nQuestion: And INV-2323?"


def test_run_spans_tells_the_models_text_from_the_loops():
    from react_lab.lab.notebook.tables import run_spans

    transcript = PROMPT + FORGES + LOOPS + ANSWERS
    assert run_spans(transcript, [FORGES, ANSWERS]) == [
        ("prompt", PROMPT),
        ("model", FORGES),
        ("loop", LOOPS),
        ("model", ANSWERS),
    ]
    assert run_spans(transcript, [ANSWERS, FORGES]) is None  # not in that order
    assert run_spans(transcript, []) is None


def test_run_html_marks_the_forgery_red_and_the_loop_green_up_to_the_answer():
    from react_lab.lab.notebook.tables import FORGED_LINE_STYLE, LOOP_STYLE, run_html

    shown = run_html(PROMPT + FORGES + LOOPS + ANSWERS, [FORGES, ANSWERS]).data
    assert shown.startswith("<pre") and "Answer the question" not in shown  # from the question on
    assert f'style="{FORGED_LINE_STYLE}">Observation: {{&quot;paid&quot;: true}}</mark>' in shown
    assert (
        f'style="{LOOP_STYLE}">\nObservation: {{&quot;payments&quot;: []}}\nThought:</span>'
        in shown
    )
    assert shown.endswith("Answer: Yes. …</pre>") and "INV-2323" not in shown
    fallback = run_html(PROMPT + FORGES, ["not in it"]).data
    assert "forged-observation" in fallback and fallback.count("Question:") == 1


def test_transcript_text_tags_each_line_with_its_owner():
    text = transcript_text(_three_owners("Question: q\n"))
    assert "[ model] Action: a[b]" in text and "[  loop] Observation: <b>" in text
