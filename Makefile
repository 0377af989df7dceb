# Two commands for a newcomer: `make report` and `make test`.
# Each creates the local virtual environment (.venv) from pyproject.toml when needed, with only
# what it needs: `report` the six run-time packages, `test` the test extra on top.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
REPORT_STAMP := $(VENV)/.installed-report
TEST_STAMP   := $(VENV)/.installed-test
NCU_STAMP    := $(VENV)/.installed-ncu-rep

.PHONY: report test test-ncu-rep venv bench bench-quick docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(REPORT_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	# Byte-compile as a normal install does (an editable one does not): ~60 ms less start-up
	# per run where PYTHONDONTWRITEBYTECODE is set.
	$(BIN)/python -m compileall -q roofreport
	touch $@

$(TEST_STAMP): $(REPORT_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

venv: $(TEST_STAMP)

report: $(REPORT_STAMP)
	$(BIN)/roofreport build sample_logs/ -o report.pdf --html report.html

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# NVIDIA's `ncu-report` wheel is licensed for use only on systems with NVIDIA GPUs: neither
# `make report` nor `make test` (nor CI) installs it. On a machine with an NVIDIA GPU this target
# installs it and runs the tests of the .ncu-rep reader (they skip, saying why, without it).
$(NCU_STAMP): $(TEST_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,ncu-rep]'
	touch $@

test-ncu-rep: $(NCU_STAMP)
	$(BIN)/python -m pytest -q tests/test_ncu_rep.py tests/test_ncu_sniff.py tests/test_gpu_corpus_names.py

# docs/tables.md is written from roofreport/tables/schema.py (tests/test_docs.py checks it is current).
docs: $(REPORT_STAMP)
	$(BIN)/python -m roofreport.tables.docs > docs/tables.md

# The baseline guard (benchmarks/bench_guard.py) measures this checkout against BASE (default: the
# main commit it started from) in one run, interleaved, and fails on a > 10 % CPU or memory
# regression; then the other benchmarks. `bench-quick` is the guard's quick part alone (< 1 min).
BASE ?=
bench: $(TEST_STAMP)
	nice $(BIN)/python benchmarks/bench_guard.py $(if $(BASE),--base $(BASE))
	$(BIN)/python benchmarks/bench_ingest.py
	$(BIN)/python benchmarks/bench_campaign.py
	$(BIN)/python benchmarks/bench_hostile.py

bench-quick: $(TEST_STAMP)
	@nice $(BIN)/python benchmarks/bench_guard.py --quick $(if $(BASE),--base $(BASE))

clean:
	rm -rf $(VENV) report.pdf report.html build dist tests/actual
