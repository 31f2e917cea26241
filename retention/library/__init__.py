"""One lifecycle for every job: run, apply and undo (and the plan on its own).

``run.run_lifecycle(job, setup)`` takes any ``job.Job`` (``kinds.RunJob``, ``ApplyJob``,
``UndoJob``) from its configuration to its metrics and returns a typed ``job.Ended``;
``plan.plan_fleet(setup, ...)`` writes a plan; ``jobs`` holds the work of a run and an
apply (plan, gate, send, journal); ``ending`` the notices, the run-finished event and the
metrics. Nothing here prints: the command line prints what comes back.
"""
