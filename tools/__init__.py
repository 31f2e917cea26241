"""Checks the build runs over the repository (not part of the retention package)."""
