"""HTML views of transcripts for the notebooks."""
from react_lab.lab.notebook.tables import html_columns, transcript_html
from react_lab.trace import Transcript


def test_html_columns_puts_each_text_in_its_own_escaped_column():
    out = html_columns({"raw": [("prompt", "Q <x>"), ("model", " a")], "chat": [("model", "b")]})
    assert out.count("<td") == 2 and "&lt;x&gt;" in out and "<b>chat</b>" in out
    assert "#dbeafe" in out     # the model's colour, as in transcript_html


def test_transcript_html_colours_each_owner_and_escapes_the_text():
    t = Transcript()
    t.add("prompt", "Instructions.\nQuestion: q\n")
    t.add("model", "Thought: x\nAction: a[b]\n")
    t.add("loop", "Observation: <b>\n")
    out = transcript_html(t)
    assert "&lt;b&gt;" in out and "<b>" not in out
    assert 'title="written by the model" style="background:#dbeafe;color:#1d4ed8"' in out
    assert "characters of prompt prefix" in out and "Question: q" in out
    assert "Instructions." not in out and "Instructions." in transcript_html(t, show_prompt=True)
    assert out.startswith('<div style="font-size:90%">written by: ')
