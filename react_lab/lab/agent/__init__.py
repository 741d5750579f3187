"""The bench's agent: the guarded text loop, the native loop, their guards and the tolerant parser.

The learner's agent is :mod:`react_lab.agent` (what the core notebooks build); this one is
what the bench measures, and where it differs from the learner's, and why, is the README's
table "The two agents". It imports the lesson (the protocol, the tools, the schemas); the
lesson never imports it.
"""
