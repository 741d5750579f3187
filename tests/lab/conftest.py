"""The ``loop`` fixture of the lab's tests: each scenario once per loop, with the lab's guards."""

import pytest
from helpers.two_loops import loops

from react_lab.lab.guards import LabGuards


@pytest.fixture(params=loops(LabGuards), ids=lambda loop: loop.name)
def loop(request):
    """Each scenario runs once per loop (text, native), with :class:`LabGuards` by default."""
    return request.param
