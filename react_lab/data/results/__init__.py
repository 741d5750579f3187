"""Saved results of the long experiments (``react-lab eval/forge-rate --save-results NAME``); see react_lab.results."""
