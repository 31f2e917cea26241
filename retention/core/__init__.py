"""The pure core: policies, decisions, the plan file's model, the checks of apply, what undo puts
back.

It reads no clock, opens no file, speaks no HTTP and prints nothing; it imports only the
standard library, pydantic, msgspec, croniter and itself (an import-linter contract).
"""
