"""The scripts that build the shipped data.

The billing database, the task set, the paraphrase set.
"""
