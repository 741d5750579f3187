"""What the core notebooks use around the learner's agent: the model, the checkers, the quizzes.

The learner's own agent, ``my_agent.py``, is saved by the checkers and loaded by
:func:`load_agent` (:mod:`react_lab.workshop.agent_file`); importing this package in IPython
registers the ``%agent`` magic that puts a saved piece back into a cell to edit. Every save is
kept: :func:`agent_versions` lists the versions, :func:`restore_version` puts one back.
:func:`warm_up` pays every one-off cost before a learner's first step.

The names a core notebook imports in one line (its facade): the model and the checkers
here, the lesson's own names (``ACTION_RE``, ``call_tool``, ...) from the lesson modules. A
core notebook imports only these and the lesson, never :mod:`react_lab.lab`.
"""

from ..lab.backends.load import load_model  # noqa: F401
from ..lab.notebook.gold import check_charges, invoice_paid, judge_loop, judge_run, run_of  # noqa: F401
from ..lab.notebook.tables import run_html  # noqa: F401
from ..lab.notebook.warm import warm_up  # noqa: F401
from .agent_file import (  # noqa: F401
    agent_versions,
    check,
    download_link,
    load_agent,
    register_magic,
    restore_version,
    save,
)
from .claims import holds  # noqa: F401
from .minutes import show_minutes  # noqa: F401
from .quiz import quiz  # noqa: F401

register_magic()  # IPython only: nothing happens in a script
