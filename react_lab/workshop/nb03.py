"""What notebook 03 uses around the learner's loop: a forged row set beside the database's.

With ``stop=None`` the model writes an ``Observation`` of its own after its action: a row
copied from the exemplar, the question's invoice put in. :func:`forged_row` prints the
fields of that row beside the same invoice's fields in the database, and the payments the
database holds, so the learner sees what the model made up.
"""

from __future__ import annotations

import json
import re

from ..lab.experiments import forge, results  # noqa: F401 -- the forgery experiment's file
from ..tools import call_tool, default_tools

#: A field of a JSON row, as the model writes one: ``"key": "text"`` or ``"key": 12.5``.
FIELD = re.compile(r'"(\w+)": ("[^"]*"|-?[\d.]+)')


def forged_row(texts) -> None:
    """Print the first model-written Observation's fields beside the database's row.

    ``texts`` are the model's completions in order (``forge.Recorded(model).texts``). The
    row may be cut off (``max_tokens``): the fields read are those complete. Prints one
    line when no completion holds a forged observation.
    """
    tail = next((forge.forged_tail(text) for text in texts if forge.forged_tail(text)), "")
    row = {k: json.loads(v) for k, v in FIELD.findall(tail.split("\n", 1)[0])}
    invoice = row.get("invoice_id")
    if not invoice:
        print("no completion holds an Observation the model wrote")
        return
    tools = default_tools()
    found = call_tool(tools, "find_invoice", [invoice])
    real = found.value if found.error is None and isinstance(found.value, dict) else {}
    payments = json.loads(call_tool(tools, "get_payments", [invoice]).text).get("payments", [])
    keys = [k for k in row if k != "invoice_id" and k in real]
    print(f"{invoice}, the model's row: " + ", ".join(f"{k} {row[k]}" for k in keys))
    print(
        f"{invoice}, the database's: "
        + ", ".join(f"{k} {real[k]}" for k in keys)
        + f"; payments {payments}"
    )
