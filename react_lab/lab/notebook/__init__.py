"""What the bench notebooks and the command line show: plots, tables, widgets, the warm-up.

The core notebooks' helpers are :mod:`react_lab.workshop`; the bench notebooks import from
here and from the lab's other rooms.
"""

from .warm import warm_up  # noqa: F401
