"""The bench: the machinery that runs and measures both agents.

``guards`` (the lab's guards: the bench agent's and the rest the experiments use), ``loops``
(the bench agent's loops run with them), ``backends`` (the models the loops talk to),
``experiments`` (the measurements), ``notebook`` (widgets, exercises, quizzes, plots and
tables the notebooks use), ``cli``
(the react-lab command), ``extras`` (the optional libraries, imported when a feature needs
one), ``mcp`` (the billing tools over MCP), ``provenance`` (where an
answer's values came from, for the ladder's answer checks) and ``builders`` (the scripts
that build the shipped database and task sets). The lab imports the lesson (the modules
at the top of :mod:`react_lab`); the lesson never imports the lab.
"""
