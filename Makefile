# Shortcuts for dev.py, which needs nothing but Python (use it directly where make is missing).
PYTHON ?= python3

.PHONY: setup demo test gates check docs bench clean

setup demo test gates check:
	$(PYTHON) dev.py $@

docs: setup
	.venv/bin/python -m torchport.rules.docs

bench: setup
	OMP_NUM_THREADS=1 .venv/bin/python benchmarks/check_speed.py --limit 100
	OMP_NUM_THREADS=1 .venv/bin/python benchmarks/run_overhead.py
	OMP_NUM_THREADS=1 .venv/bin/python benchmarks/loader_overhead.py

clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache
