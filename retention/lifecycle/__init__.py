"""One lifecycle for every job: run, apply and undo."""
