"""`retention doctor`: the preflight an operator runs before scheduling the job, each check
a line (passed, warning or failed, with what to do)."""
