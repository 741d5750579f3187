"""react_lab: build a ReAct agent step by step and run it on a real, embedded model.

The agent a learner reads is at the top of the package, in the order the notebooks use
it: ``protocol`` (labels, prompt, stop sequence, the seed's regex), ``parser`` (the
tolerant parser), ``tools`` (Tool, Observation, dispatch) and ``billing`` (the billing
tools on SQLite and their schemas), ``loop`` (the text loop), ``trace`` (steps,
owner-marked transcripts, run results), ``schema`` (a call's arguments against its JSON
Schema), ``native`` and ``tool_calls`` (native tool calling), ``cost``, ``guards``,
``checks`` and ``context`` (compaction); ``mcp`` only names the command that moved.
Private parsing fallbacks are in ``_parsing``. The bench's machinery is in ``lab``:
``lab.backends`` (the models the loops talk to), ``lab.experiments`` (the measurements),
``lab.notebook`` (exercises, widgets, plots and tables), ``lab.cli`` (the react-lab
command) and ``lab.mcp`` (the tools over the Model Context Protocol). Nothing is loaded
on import; the embedded model loads on first use, or in
:func:`react_lab.lab.notebook.warm_up`.
"""

__version__ = "0.1.0"
