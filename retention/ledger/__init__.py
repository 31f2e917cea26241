"""The ledger: every run remembered in a database (SQLite by default, PostgreSQL for a team
or the shards of an Indexed Job), chained so that an edit shows, and read by the planner to
catch what changed outside retention (docs/ledger.md)."""
