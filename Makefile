# One entry point for everything. `make demo` and `make test` each create the environment first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test check lint typecheck imports bench docs clean

setup: $(STAMP)

$(STAMP): pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m torchport.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

imports: $(STAMP)
	$(BIN)/lint-imports

check: lint typecheck imports test

docs: $(STAMP)
	$(BIN)/python -m torchport.rules.docs

bench: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/check_speed.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
