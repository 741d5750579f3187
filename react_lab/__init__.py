"""react_lab: build a ReAct agent step by step and run it on a real, embedded model.

The agent a learner reads is at the top of the package, in the order the notebooks use
it: ``protocol`` (labels, prompt, stop sequence, the seed's regex), ``parser`` (the
tolerant parser), ``tools`` (the billing tools on SQLite), ``loop`` (the text loop),
``trace`` (steps, owner-marked transcripts, run results), ``schema`` and ``native``
(native tool calling), ``mcp`` (the tools over the Model Context Protocol), ``cost``,
``guards`` and ``context`` (compaction). The rest lives in rooms of its own:
``backends`` (the models the loops talk to), ``experiments`` (the lab's measurements),
``notebook`` (widgets, exercises, plots and tables) and ``cli`` (the react-lab command).
Nothing is loaded on import; the embedded model loads on first use, or in
:func:`react_lab.lab.notebook.warm_up`.
"""

__version__ = "0.1.0"
