"""Public failure cases, one JSON object a line; read them with :func:`react_lab.data.load_cases`."""
