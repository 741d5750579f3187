"""The scripts that build the shipped data: the billing database, the task set, the paraphrase set."""
