"""react_lab: build a ReAct agent step by step and run it on a real, embedded model.

Modules, in the order the notebooks use them: ``models`` (completion backends),
``protocol`` (labels, prompt, stop sequence, the seed's regex), ``parser`` (the tolerant
parser), ``tools`` (the billing tools on SQLite), ``loop`` (the text loop), ``trace``
(steps, owner-marked transcripts, run results), ``forge``, then native tool calling
(``schema``, ``grammar``, ``chat``, ``native``, ``abuses``), ``cost``, ``guards``,
``context`` (compaction), ``tasks`` and ``evals``. Nothing is loaded on import; the
embedded model loads on first use.
"""
__version__ = "0.1.0"
