"""react_lab.lab.sandbox: working copies of the shipped database, checksums, payments on a copy."""

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from react_lab.billing import ToolError
from react_lab.lab.sandbox import db_checksum, is_shipped, payment_tools, working_copy
from react_lab.tools import DB_PATH, call_tool


def test_working_copy_is_a_writable_copy(tmp_path, shipped_sum):
    copy = working_copy(tmp_path)
    assert copy != DB_PATH and db_checksum(copy) == shipped_sum
    with sqlite3.connect(copy) as connection:
        connection.execute("DELETE FROM help_articles")
    assert db_checksum(copy) != shipped_sum


def test_a_working_copy_in_its_own_temp_dir_is_removed_when_the_process_exits(tmp_path):
    code = (
        "from react_lab.lab.sandbox import working_copy; p = working_copy(); print(p); "
        "assert p.is_file()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    copy = Path(out.stdout.strip())
    assert copy.name == "billing.sqlite" and not copy.parent.exists()
    kept = working_copy(tmp_path)  # a folder the caller chose is the caller's to keep
    assert kept.parent == tmp_path and kept.is_file()


def test_payment_tools_refuse_the_shipped_db():
    assert is_shipped(DB_PATH)
    with pytest.raises(ToolError, match="shipped"):
        payment_tools(DB_PATH)


def test_payment_tools_refuse_the_repository_copy_and_non_databases(tmp_path):
    repo_copy = tmp_path / "react_lab" / "data" / "billing.sqlite"
    repo_copy.parent.mkdir(parents=True)
    repo_copy.write_bytes(DB_PATH.read_bytes())
    assert is_shipped(repo_copy)
    with pytest.raises(ToolError, match="shipped database"):
        payment_tools(repo_copy)
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    with pytest.raises(ValueError, match="not a copy of the billing database"):
        payment_tools(text)
    with pytest.raises(FileNotFoundError, match="working_copy"):
        payment_tools(tmp_path / "missing.sqlite")


def test_payment_tools_write_to_the_copy_only(tmp_path, shipped_sum, scheduled):
    copy = working_copy(tmp_path)
    assert not is_shipped(copy)
    pay = payment_tools(copy)
    assert set(pay) == {"schedule_payment"} and pay["schedule_payment"].side_effect
    obs = call_tool(pay, "schedule_payment", ["INV-2291", "100"], approved=True)
    assert obs.error is None and scheduled(copy) == 1
    assert db_checksum() == shipped_sum
