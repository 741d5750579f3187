"""The quoted figures and the claim / measured / why table."""

from datetime import date

from react_lab.workshop.claims import (
    FUNCTION_CALLING,
    PAPER,
    SEED_WINDOW,
    TEXT_PROTOCOL,
    ClaimTable,
    citation,
    months_between,
)


def test_the_text_protocol_had_eight_months_to_itself():
    assert months_between(TEXT_PROTOCOL[1], FUNCTION_CALLING[1]) == SEED_WINDOW["months"] == 8
    assert (
        f"{TEXT_PROTOCOL[1]:%B %Y}" == SEED_WINDOW["from"]
        and f"{FUNCTION_CALLING[1]:%B %Y}" == SEED_WINDOW["to"]
    )


def test_months_between_counts_a_month_once_its_day_is_reached():
    assert months_between(date(2022, 10, 6), date(2023, 6, 5)) == 7
    assert months_between(date(2022, 10, 6), date(2023, 6, 6)) == 8
    assert months_between(date(2023, 1, 31), date(2023, 1, 31)) == 0


def test_citation_names_title_authors_venue_and_arxiv_id():
    text = citation()
    assert PAPER["title"] in text and "Shunyu Yao" in text and "and Yuan Cao" in text
    assert "arXiv:2210.03629" in text and "ICLR 2023" in text


def test_claim_table_shows_every_row_as_text_and_html():
    table = ClaimTable().add("340 tokens", "399 <cl100k>", "longer tool lines").add("a", "b", "c")
    assert len(table) == 2
    text = repr(table)
    assert text.count("claim:") == 2 and "measured here:   399 <cl100k>" in text
    html = table._repr_html_()
    assert html.count("<tr>") == 3 and "&lt;cl100k&gt;" in html and "why they differ" in html


def test_holds_prints_a_statement_marked_and_raises_only_in_solutions_mode(monkeypatch, capsys):
    import pytest

    from react_lab.workshop.claims import holds

    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    holds("the model wrote no Answer:", True)
    holds("the model wrote no Answer:", False)
    assert capsys.readouterr().out.splitlines() == [
        "✓ the model wrote no Answer:",
        "✗ not in this run: the model wrote no Answer:",
    ]
    monkeypatch.setenv("REACT_LAB_SOLUTIONS", "1")
    holds("it holds", 1)
    with pytest.raises(AssertionError, match="does not bear it out"):
        holds("the model wrote no Answer:", False)
