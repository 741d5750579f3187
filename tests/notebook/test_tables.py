"""HTML views of transcripts for the notebooks."""
from react_lab.lab.notebook.tables import html_columns


def test_html_columns_puts_each_text_in_its_own_escaped_column():
    out = html_columns({"raw": [("prompt", "Q <x>"), ("model", " a")], "chat": [("model", "b")]})
    assert out.count("<td") == 2 and "&lt;x&gt;" in out and "<b>chat</b>" in out
    assert "#dbeafe" in out     # the model's colour, as in Transcript.render_html
