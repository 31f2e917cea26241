"""A run folder's files: plan.json, decisions.jsonl, the journal, undo.json, the folder itself."""
