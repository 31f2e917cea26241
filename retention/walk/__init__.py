"""Discovery and the walk: the targets of each project and every snapshot of each, streamed."""
