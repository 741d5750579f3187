"""The lab's measurements.

Forged observations, argument abuses, failure modes, evaluation, the ladder.

Each experiment keeps its own fingerprint inputs; :mod:`.results` stores their saved
results and refuses a stale one. :mod:`.tasks` holds the task set and the scorer,
:mod:`.stats` the intervals and paired tests.
"""
