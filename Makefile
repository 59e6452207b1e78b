# Fresh machine:  make run   (set up .venv and launch the app)
#                 make test  (set up .venv with the dev extra and run every test)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU wheel of torch 2.13.0 lies on this project's machines, so this takes
# no download. On a CUDA machine: make run TORCH=torch (or any build you like).
TORCH ?= torch==2.13.0
FILE ?=

.PHONY: run test setup setup-dev sysdeps lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.setup: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.setup-dev: $(VENV)/.setup pyproject.toml
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

setup: $(VENV)/.setup
setup-dev: $(VENV)/.setup-dev

run: setup
	$(BIN)/revstudio $(FILE)

# Xvfb and the xcb libraries Qt needs for the real-window tests (root only; skipped otherwise).
sysdeps:
	@sh packaging/install-system-deps.sh

test: setup-dev sysdeps
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

lint: setup-dev
	$(BIN)/ruff check revstudio tests benchmarks
	$(BIN)/lint-imports --no-cache

bench: setup-dev
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
