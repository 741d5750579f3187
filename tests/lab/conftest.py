"""The lab's tests' own fixture: the embedded model, for the tests marked ``model``."""

import pytest


@pytest.fixture(scope="module")
def model():
    """The process-wide embedded model (loaded once, on first use)."""
    from react_lab.lab.backends.local import local_model

    return local_model()
