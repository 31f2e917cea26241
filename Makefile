# Two commands on a fresh machine: `make test` and `make demo`. Both create .venv when it is
# missing and install the package with its test extras; the install reruns when pyproject.toml
# changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test lint typecheck unit unit-compiled compiled demo screenshots bench bench-sim bench-fleet bench-apply bench-forecast bench-ledger bench-evidence chaos clean

# uv installs what pip would, from the same index, in a third of the time (pip re-downloads
# every wheel: this index sends no caching headers). --compile-bytecode: pip compiles the
# modules it installs, uv only when asked. The venv keeps pip and setuptools, which the
# compiled core's build and test_deploy use.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("retention needs Python >= 3.11, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode -e '.[test]'
	touch $(STAMP)

# Two rounds, each on both cores: the checks beside the compiled core's build, then the
# suite beside the compiled core's tests (the build copies tests/, so it ends before any
# pytest starts). make's own -j, not a shell's &: a background job ignores SIGINT, and the
# stop tests send it.
test: $(STAMP)
	$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck compiled
	$(MAKE) --no-print-directory -j2 --output-sync=target unit unit-compiled

lint: $(STAMP)
	$(BIN)/ruff check retention tests benchmarks tools
	$(BIN)/ruff format --check retention tests benchmarks tools
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy --strict retention tests tools

# One pytest worker per core, at most four (pytest-xdist): the suite is as much waiting on
# sockets and child processes as computing, and twice as fast on two cores. Hypothesis runs
# a fifth of its examples here and all of them under CI=true (tests/support/examples.py).
# A bare `pytest` runs in one process, for a file or a test at a time. The ten slowest tests
# are listed at the end: the suite's time is a goal (make test under 4 minutes here).
unit: $(STAMP)
	$(BIN)/pytest -q --numprocesses=auto --maxprocesses=4 --durations=10

# The compiled core (tools/compiled.py): a copy of the package, with the tests and tools,
# compiled in place under build/compiled/ (about 15 s; again only when a source changed).
# unit-compiled runs the tests of the decision core against it, and test_compiled.py checks
# that they really ran compiled code (and that the main run ran none). On a machine without
# a C compiler the wheel falls back to plain Python; this check does not.
COMPILED := build/compiled
CORE_TESTS := test_compiled test_policy_engine test_policy_rules test_policy_trace \
	test_policy_model test_restic_conformance test_plan_golden test_plan_invariants \
	test_plan_trace test_deciding test_forecast test_hold_records test_held_ids test_ids \
	test_restore_points test_compare test_guard test_grace_months test_timestamps \
	test_window test_freshness test_fraction_words test_lease_reason

compiled: $(COMPILED)/.built

# Every file and folder it copies is a prerequisite: a changed golden file, test vector or
# schema rebuilds it, and so does a deleted module (its folder's time changes).
COPIED := retention tests tools policies pyproject.toml retention.example.yaml
$(COMPILED)/.built: $(STAMP) Makefile $(shell find $(COPIED) -not -path '*/__pycache__*')
	rm -rf $(COMPILED) && mkdir -p $(COMPILED)
	cp -r $(COPIED) $(COMPILED)/
	find $(COMPILED) -name __pycache__ -prune -exec rm -rf {} +
	$(BIN)/python -m tools.compiled $(COMPILED)
	touch $@

# Hypothesis's quick profile: the first run holds the invariants to every example; this one
# shows the compiled modules decide as the plain ones do, on a fifth of them.
unit-compiled: $(COMPILED)/.built
	cd $(COMPILED) && RETENTION_EXPECT_COMPILED=1 HYPOTHESIS_PROFILE=quick \
		$(abspath $(BIN))/pytest -q -p no:cacheprovider \
		--numprocesses=auto --maxprocesses=4 $(patsubst %,tests/%.py,$(CORE_TESTS))

demo: $(STAMP)
	$(BIN)/retention demo

# The README's pictures of the demo's report, at 1280 and 800 px (docs/images/report-*.png);
# needs Chromium. Look at them before committing them.
screenshots: $(STAMP)
	$(BIN)/python -m tools.report_screenshots

# make bench takes about twenty-five minutes on two cores (the 20,000-cluster plan and the
# naive baseline take five each, the forecast of 2,000 clusters a year ahead four and a half),
# and the ledger's two about forty more (bench-ledger below).
# The benchmarks time the compiled core, as the wheel and the Docker image ship it (their
# child processes inherit PYTHONPATH, absolute so a child's own folder does not matter);
# each says which form it timed.
BENCH := PYTHONPATH=$(abspath $(COMPILED)) $(BIN)/python

bench: $(COMPILED)/.built
	$(BENCH) benchmarks/parse.py
	$(BENCH) benchmarks/core.py
	$(BENCH) benchmarks/forecast.py
	$(BENCH) benchmarks/plan_memory.py
	$(BENCH) benchmarks/fleet.py
	$(BENCH) benchmarks/apply.py
	$(BENCH) benchmarks/footprint.py
	$(BENCH) benchmarks/ledger.py
	$(BENCH) benchmarks/ledger_size.py
	$(BIN)/python benchmarks/suite.py
	$(BENCH) benchmarks/table.py

bench-sim: $(COMPILED)/.built
	$(BENCH) benchmarks/sim.py

bench-fleet: $(COMPILED)/.built
	$(BENCH) benchmarks/fleet.py

bench-forecast: $(COMPILED)/.built
	$(BENCH) benchmarks/forecast.py

bench-apply: $(COMPILED)/.built
	$(BENCH) benchmarks/apply.py

# What the ledger adds to a plan of the bench fleet (with and without it, in alternating
# pairs; PostgreSQL too when RETENTION_BENCH_POSTGRES_URL names a server: fifteen to twenty
# minutes) and its size after 30 daily runs of 200 clusters (about twenty-five).
bench-ledger: $(COMPILED)/.built
	$(BENCH) benchmarks/ledger.py
	$(BENCH) benchmarks/ledger_size.py

# retention evidence of a year: 365 daily runs of 200 clusters written into a new ledger
# (SQLite, and PostgreSQL when RETENTION_BENCH_POSTGRES_URL names a server), then timed.
bench-evidence: $(COMPILED)/.built
	$(BENCH) benchmarks/evidence.py

chaos: $(STAMP)
	$(BIN)/python benchmarks/chaos.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build dist *.egg-info
