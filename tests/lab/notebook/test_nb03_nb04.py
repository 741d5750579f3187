"""Notebooks 03 and 04's helpers: the forged row beside the database's, bad calls tallied."""

from react_lab import agent as solutions
from react_lab.tools import default_tools
from react_lab.workshop.nb03 import forged_row
from react_lab.workshop.nb04 import meet

FORGED = (
    " I need the invoice of cus_2291.\nAction: list_invoices[cus_2291, 2026-07-14]\n"
    'Observation: [{"invoice_id": "INV-2291", "issued": "2026-07-14", "total": 2291.0, '
    '"status": "paid", "me'
)


def test_the_forged_row_is_set_beside_the_databases(capsys):
    forged_row([FORGED, " The invoice is paid.\nAnswer: paid"])
    model, database = capsys.readouterr().out.splitlines()
    assert model == "INV-2291, the model's row: issued 2026-07-14, total 2291.0, status paid"
    assert database == (
        "INV-2291, the database's: issued 2026-07-02, total 48200.0, status approved; payments []"
    )


def test_no_forged_row_is_one_line(capsys):
    forged_row([" Look.\nAction: find_invoice[INV-2291]"])
    assert capsys.readouterr().out == "no completion holds an Observation the model wrote\n"


CALLS = [
    "list_invoices[cus_8812, July 1st]",
    "search[refunds, duplicates]",
    "list_invoices[cus_8812]",
    "list_invoices[cus_2291, 2026-07-14]",
]


def test_meet_counts_what_ran_from_the_observations(capsys):
    meet(solutions.observe, CALLS, default_tools())
    assert capsys.readouterr().out.splitlines()[-1] == (
        "your observe ran 2 of 4 (each came back []); refused 2: 2 by counting the arguments, "
        "0 by the schema"
    )
    meet(solutions.observe_args, CALLS, default_tools())
    assert capsys.readouterr().out.splitlines()[-1] == (
        "your observe ran 1 of 4 (it came back []); refused 3: 1 by counting the arguments, "
        "2 by the schema"
    )


def test_a_schema_refusal_is_counted_as_one_however_the_learner_words_it(capsys):
    """A learner's rule 8 as "Error: " + the messages, without "was not run": still the schema's."""

    def worded_otherwise(text, tools):
        said = solutions.observe_args(text, tools)
        return said.replace(" was not run:", "")  # "Error: list_invoices 'since' is ..."

    meet(worded_otherwise, CALLS, default_tools())
    assert capsys.readouterr().out.splitlines()[-1] == (
        "your observe ran 1 of 4 (it came back []); refused 3: 1 by counting the arguments, "
        "2 by the schema"
    )
