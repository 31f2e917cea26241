"""Reviewing a policy change (`retention diff`): the policies as they were (a git ref, a
folder or a file: ``retention.config.baseline``) against the policies as they are, both
decided over one read-only walk of the fleet at one ``now``.

review.py walks and compares, render.py words the result for a terminal and for a
pull-request comment, document.py shapes it as one JSON document. Nothing here sends a
change, writes a run folder or takes the lock.
"""
