"""Notices: a short message at the end of run and apply, to Apprise URLs kept secret."""
