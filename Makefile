# Two commands on a fresh machine: `make test` and `make demo`. Both create .venv when it is
# missing and install the package with its test extras; the install reruns when pyproject.toml
# changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test lint typecheck unit demo screenshots bench bench-sim bench-fleet bench-apply bench-forecast chaos clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("retention needs Python >= 3.11, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check retention tests benchmarks tools
	$(BIN)/ruff format --check retention tests benchmarks tools
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy --strict retention tests tools

# One pytest worker per core, at most four (pytest-xdist): the suite is as much waiting on
# sockets and child processes as computing, and twice as fast on two cores. Hypothesis runs
# a fifth of its examples here and all of them under CI=true (tests/support/examples.py).
# A bare `pytest` runs in one process, for a file or a test at a time.
unit: $(STAMP)
	$(BIN)/pytest -q --numprocesses=auto --maxprocesses=4

demo: $(STAMP)
	$(BIN)/retention demo

# The README's pictures of the demo's report, at 1280 and 800 px (docs/images/report-*.png);
# needs Chromium. Look at them before committing them.
screenshots: $(STAMP)
	$(BIN)/python -m tools.report_screenshots

# make bench takes about twenty-five minutes on two cores (the 20,000-cluster plan and the
# naive baseline take five each, the forecast of 2,000 clusters a year ahead four and a half).
bench: $(STAMP)
	$(BIN)/python benchmarks/parse.py
	$(BIN)/python benchmarks/core.py
	$(BIN)/python benchmarks/forecast.py
	$(BIN)/python benchmarks/plan_memory.py
	$(BIN)/python benchmarks/fleet.py
	$(BIN)/python benchmarks/apply.py
	$(BIN)/python benchmarks/table.py

bench-sim: $(STAMP)
	$(BIN)/python benchmarks/sim.py

bench-fleet: $(STAMP)
	$(BIN)/python benchmarks/fleet.py

bench-forecast: $(STAMP)
	$(BIN)/python benchmarks/forecast.py

bench-apply: $(STAMP)
	$(BIN)/python benchmarks/apply.py

chaos: $(STAMP)
	$(BIN)/python benchmarks/chaos.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build dist *.egg-info
