"""`retention clusters`: what discovery finds in the configuration's projects, each cluster
and legacy config server with its kind, typeName, snapshot count, newest snapshot and the
policies that match it (or none: unmanaged), so that a person writes ``match: clusters``
from the names the service has. listing.py walks and words it; nothing here writes a file,
takes the lock or sends a change.
"""
