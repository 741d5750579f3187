"""Fixtures shared by the test modules: the shipped database must never change, tool sets, loops."""

import os
import sqlite3

import pytest
from helpers.two_loops import loops
from hypothesis import settings

from react_lab.lab.agent.guards import Guards
from react_lab.lab.sandbox import db_checksum, payment_tools, working_copy
from react_lab.tools import connection, default_tools, open_db

# The README's test command (scripts/test.sh) sets REACT_LAB_DERANDOMIZE=1: its property tests
# draw the same examples on every run, so a landing does not hang on a random draw; run pytest
# without it to explore (a failure found that way becomes an @example of its test).
settings.register_profile("derandomized", derandomize=True)
if os.environ.get("REACT_LAB_DERANDOMIZE") == "1":
    settings.load_profile("derandomized")

#: The shipped database's sha256 when the test session started.
SHIPPED_SUM = db_checksum()


@pytest.fixture(scope="session")
def shipped_sum() -> str:
    """The sha256 of the shipped database file as the session found it."""
    return SHIPPED_SUM


@pytest.fixture(autouse=True)
def shipped_db_unchanged(shipped_sum):
    """The shipped database's one guard, on every test: byte-identical before it and after it.

    A test that checks the file in the middle of a run compares ``db_checksum()`` with
    ``shipped_sum``; none writes a guard of its own.
    """
    assert db_checksum() == shipped_sum, "the shipped database changed before this test"
    yield
    assert db_checksum() == shipped_sum, "this test changed the shipped database"


@pytest.fixture(scope="module")
def conn():
    """The shipped database, opened read-only."""
    connection = open_db()
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def tools():
    """The six read-only tools on the shipped database (opened read-only)."""
    return default_tools()


@pytest.fixture
def payment_setup(tmp_path):
    """A working copy of the database and the read-only tools plus ``schedule_payment`` on it."""
    copy = working_copy(tmp_path)
    with_payment = {**default_tools(), **payment_tools(copy)}
    yield copy, with_payment
    connection(with_payment["schedule_payment"]).close()


@pytest.fixture
def scheduled():
    """``scheduled(path)``: how many payments the database at ``path`` has scheduled."""

    def count(path) -> int:
        with sqlite3.connect(path) as conn:
            return conn.execute("SELECT count(*) FROM scheduled_payments").fetchone()[0]

    return count


@pytest.fixture(params=["text", "native"])
def loop(request):
    """Each guard scenario runs once per loop (text, native), with the lesson's guards by default.

    A test module that names other default guards in ``GUARDS`` gets those (the lab's tests:
    ``GUARDS = LabGuards``). The adapters are ``tests/helpers/two_loops.py``'s.
    """
    guards = getattr(request.module, "GUARDS", Guards)
    return {adapter.name: adapter for adapter in loops(guards)}[request.param]
