"""retention as a library: ``Retention`` (retention.py), a method per job, each taking one
request (requests.py) and returning one result; the lifecycle every job goes through
(lifecycle.py: configuration, lock, client, stop, reports, notice, metrics), the jobs that
change the fleet (changing.py: run, apply, undo) and those that only read it or prune old
run folders (reading.py: plan, diff, forecast, prune), and how a job ends (ending.py: the
notice, the run-finished event, the metrics). Nothing here prints: the command line
(retention.cli) prints what comes back, and so can a script."""
