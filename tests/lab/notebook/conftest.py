"""Fixtures for the notebook support's tests: the learner's file in a folder of the test's own."""

import pytest

from react_lab import agent as solutions


@pytest.fixture
def agent_file(tmp_path, monkeypatch):
    """The learner's file, in a folder of the test's own; solutions mode off."""
    path = tmp_path / "my_agent.py"
    monkeypatch.setenv("REACT_LAB_AGENT_FILE", str(path))
    monkeypatch.delenv("REACT_LAB_SOLUTIONS", raising=False)
    return path


@pytest.fixture
def references():
    """The reference pieces by exercise name."""
    from react_lab.workshop.core_exercises import CORE

    return {name: getattr(solutions, name) for name in CORE}


@pytest.fixture(autouse=True)
def _no_choice_remembered():
    """What the last load_agent chose (what %agent shows) does not leak from test to test."""
    from react_lab.workshop import agent_file

    agent_file._LAST.clear()
    agent_file._LAST_REASON.clear()
    yield
    agent_file._LAST.clear()
    agent_file._LAST_REASON.clear()
