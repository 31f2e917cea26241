"""The apply step: the PATCHes of a plan's changes, compare-and-swap, journalled ahead."""
