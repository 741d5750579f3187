"""react_lab: build a ReAct agent step by step and run it on a real, embedded model.

Modules, in the order the notebooks use them: ``models`` (completion backends),
``protocol`` (labels, prompt, stop sequence, the seed's regex), ``parser`` (the tolerant
parser), ``tools`` (the billing tools on SQLite), ``loop`` (the text loop), ``trace``
(steps, owner-marked transcripts, run results), ``forge``, then native tool calling
(``schema``, ``grammar``, ``chat``, ``native``, ``abuses``), ``cost``, ``guards``,
``context`` (compaction), ``tasks`` and ``evals``; ``results`` saves and loads the long
experiments' results. Nothing is loaded on import; the embedded model loads on first
use, or in :func:`warm_up`, which pays every one-off cost before a learner's first step.
"""
from .warm import warm_up  # noqa: F401 -- react_lab.warm_up()

__version__ = "0.1.0"
