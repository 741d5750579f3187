"""The lab's measurements.

Forged observations, argument abuses, failure modes, evaluation, the ladder, and a learner's
own agent file on the same tasks (:mod:`.agent_runs`).

Each experiment keeps its own fingerprint inputs; :mod:`.results` stores their saved
results and refuses a stale one. :mod:`.tasks` holds the task set and the scorer,
:mod:`.stats` the intervals and paired tests.
"""
