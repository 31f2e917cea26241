"""retention: a snapshot retention policy engine for Ops Manager class REST APIs."""

__version__ = "0.1.0"
