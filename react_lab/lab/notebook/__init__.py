"""What the notebooks use around the agent: widgets, exercises, claims, plots and tables.

:func:`warm_up` pays every one-off cost before a learner's first step.
"""
from .warm import warm_up  # noqa: F401
