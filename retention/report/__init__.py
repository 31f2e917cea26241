"""Reports of a run (DESIGN.md section 8): report.html and report.md, rendered from the run
folder's plan.json, decisions.jsonl and results.jsonl.

    from retention.report import RunInfo, render_reports
    render_reports(run_dir, RunInfo(run_id, "run", started, finished, exit_code, __version__))

Rendering is pure apart from reading those three files and writing the reports; the templates
ship inside the package (retention/report/templates).
"""

from __future__ import annotations

from retention.report.model import RunInfo
from retention.report.render import render_reports

__all__ = ["RunInfo", "render_reports"]
