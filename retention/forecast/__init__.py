"""Forecasting what the policies keep (`retention forecast`): one read-only walk of the
fleet, then each cluster run forward step by step under its policies (and a base's, to
compare) with the pure core (retention.core.forecast, retention.core.cadence).

forecaster.py walks and forecasts, keeping per cluster only its series of counts and bytes
and the ladder it ends with; render.py words it for a terminal, page.py and charts.py draw
it as an HTML page, document.py shapes it as one JSON document. Nothing here sends a
change, writes a run folder or takes the lock.
"""
