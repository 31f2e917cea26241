"""Undo as a job: put back what a run's journal says it shortened."""
