"""The decision model: snapshots, policies, alerts and now in; a plan out (pure)."""
