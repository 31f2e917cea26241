"""Policies: the policy language, loading and validation, and the pure keep-rule engine."""
