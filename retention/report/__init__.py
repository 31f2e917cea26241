"""Reports of a run: report.html and report.md, rendered from the run folder's plan.json,
decisions.jsonl.zst and results.jsonl (docs/plan-file.md lists the files of a run folder), and
the run's summary that its notice says.

    from retention.report import RunInfo, render_run
    rendered = render_run(run_dir, RunInfo(run_id, "run", started, finished, code, __version__))
    rendered.paths, rendered.summary  # the reports written; the summary for the notice

Rendering is pure apart from reading those three files and writing the reports; the templates
ship inside the package (retention/report/templates).
"""

from __future__ import annotations

from retention.report.render import RenderedRun, render_reports, render_run
from retention.report.summary import RunInfo, RunSummary

__all__ = ["RenderedRun", "RunInfo", "RunSummary", "render_reports", "render_run"]
