"""The bench's measurements a core notebook shows beside its own live run.

Notebook 03 loads the forgery experiment's fingerprinted file (:mod:`forge`), 04 the argument
abuses (:mod:`abuses`); :mod:`results` reads any shipped results file and says how it was made.
They are the lab's (:mod:`react_lab.lab.experiments`): the core path reads their results, the
bench notebooks run them in full.
"""

from ..lab.experiments import abuses, forge, results  # noqa: F401
