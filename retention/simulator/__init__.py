"""A real HTTP server that behaves like the API contract, for the demo, tests and benchmarks.

It shares only the pydantic models with the client (none of its code), so a bug on one side
is not mirrored on the other.
"""
