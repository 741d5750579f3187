"""Saved results of the long experiments (``react-lab eval/forge-rate --save-results NAME``).

:mod:`react_lab.lab.experiments.results` writes them, fingerprinted, and reads them back.
"""
