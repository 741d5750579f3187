"""One-off costs paid in react_lab.lab.notebook.warm_up().

Not inside a learner's first step (no model).
"""

import subprocess
import sys

import pytest

import react_lab.lab.notebook
from react_lab.schema import schema_validator, validate_call
from react_lab.tools import default_tools


def test_warm_up_without_the_model_pays_the_schema_check_and_the_token_counter():
    parts = react_lab.lab.notebook.warm_up(model=False)
    assert set(parts) == {"schema_check", "token_counter"}
    assert all(seconds >= 0 for seconds in parts.values())


def test_warm_up_names_an_unknown_protocol():
    with pytest.raises(ValueError, match="unknown protocol 'chat'"):
        react_lab.lab.notebook.warm_up(model=False, protocols=["text", "chat"])


def test_one_validator_per_schema():
    schema = default_tools()["list_invoices"].parameters
    assert schema_validator(schema) is schema_validator(dict(schema))  # same schema, same validator
    assert schema_validator({"type": "string"}) is not schema_validator(schema)


def test_after_warm_up_the_first_schema_check_in_a_fresh_process_is_quick():
    """The first check used to import jsonschema inside the step.

    That took 1.3 s where Jupyter is installed.
    """
    code = (
        "import time, react_lab.lab.notebook; from react_lab.schema import validate_call;"
        "from react_lab.tools import default_tools; tool = default_tools()['list_invoices'];"
        "react_lab.lab.notebook.warm_up(model=False); t = time.perf_counter();"
        "errors = validate_call(tool, {'customer_id': 'cus_8812', 'since': 'July'});"
        "print(time.perf_counter() - t, len(errors))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seconds, errors = out.stdout.split()
    assert int(errors) >= 1 and float(seconds) < 0.25, out.stdout


def test_validate_call_still_checks_formats():
    tool = default_tools()["list_invoices"]
    assert validate_call(tool, {"customer_id": "cus_8812", "since": "2026-07-01"}) == []
    assert any(
        m.startswith("since:")
        for m in validate_call(tool, {"customer_id": "cus_8812", "since": "July"})
    )
