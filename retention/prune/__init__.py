"""`retention prune` and reports.keep: which run folders go (the verdicts are the pure
``retention.core.pruning``), what each folder holds, and their removal."""
