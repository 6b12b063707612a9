# Both targets build their own virtual environment from nothing but Python.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench bench-smoke screenshots clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/agentgauge demo --out agentgauge-demo

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/pytest

# Every benchmarks/bench_*.py, each in its own process: one table, and benchmarks/RESULTS.md
# with the machine and its load. BENCH_ARGS, e.g. --python bench_graders=/tmp/bfclvenv/bin/python
# to run one with an interpreter whose environment has its reference installed.
bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)

# The same at reduced sizes (seconds each), writing nothing: fails on errors, never on timings.
bench-smoke: $(STAMP)
	$(BIN)/python benchmarks/run_all.py --smoke

# The README's pictures of the report and the viewer, taken by the browser tests in
# headless Chromium (Debian: apt install chromium chromium-driver).
screenshots: $(STAMP)
	AGENTGAUGE_SCREENSHOTS=docs/images AGENTGAUGE_REQUIRE_BROWSER=1 \
		$(BIN)/pytest -q tests/report/test_report_browser.py tests/viewer

clean:
	rm -rf $(VENV) agentgauge-demo .pytest_cache .mypy_cache .ruff_cache test-artefacts
