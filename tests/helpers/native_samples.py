"""A scripted native run both the native loop's tests and the chat backends' tests replay."""

#: The arguments of the July invoices call.
JULY = {"customer_id": "cus_8812", "since": "2026-07-01"}

#: Two chat replies: a call of list_invoices with JULY, then the answer.
CALL_THEN_ANSWER = [
    {
        "thought": "I need the July invoices.",
        "tool_calls": [{"name": "list_invoices", "arguments": JULY}],
    },
    {
        "thought": "Two invoices, one emailed twice.",
        "answer": "Two invoices: INV-2041 and INV-2116.",
    },
]
