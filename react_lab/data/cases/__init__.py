"""Public failure cases, one JSON object a line.

Read them with :func:`react_lab.data.load_cases`.
"""
