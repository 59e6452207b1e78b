# Fresh machine:  make run   (set up .venv and launch the app)
#                 make test  (set up .venv with the dev extra and run every test, 2 processes; JOBS=1: one)
#                 make test-quick  (the same without the minutes-long install tests, marker "install")
# Artefacts (packaging/README.md): make dist, make freeze, make install-desktop
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU wheel of torch 2.13.0 lies on this project's machines, so this takes
# no download. On a CUDA machine: make run TORCH=torch (or any build you like).
TORCH ?= torch==2.13.0
FILE ?=
# install-desktop: user level by default (~/.local/share); PREFIX=/opt/x or XDG_DATA_HOME=DIR to put it elsewhere.
PREFIX ?= $(HOME)/.local
DATADIR ?= $(if $(XDG_DATA_HOME),$(XDG_DATA_HOME),$(PREFIX)/share)
# The command the desktop entry runs: this checkout's venv when it has one, else revstudio on PATH.
DESKTOP_EXEC ?= $(if $(wildcard $(BIN)/revstudio),$(abspath $(BIN))/revstudio,revstudio)

.PHONY: run test test-quick setup setup-dev sysdeps lint bench clean dist freeze install-desktop uninstall-desktop

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

# Two test processes (pytest-xdist), one test file each at a time: a file's module fixtures (a built
# wheel and venv, trained runs) are made once, in one process. JOBS=1 runs them in this process alone.
JOBS ?= 2
PYTEST_JOBS := $(if $(filter 1,$(JOBS)),,-n $(JOBS) --dist loadfile)

test: setup-dev sysdeps
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q $(PYTEST_JOBS)

test-quick: setup-dev sysdeps
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q $(PYTEST_JOBS) -m "not install"

# dist/revstudio-VERSION.tar.gz and -py3-none-any.whl (the wheel is built from the sdist)
dist: setup-dev
	rm -rf dist
	$(BIN)/python -m build --no-isolation --outdir dist .

# dist/revstudio/: the one-folder frozen app (PyInstaller, packaging/revstudio.spec)
freeze: setup
	$(BIN)/pip install -q -e ".[freeze]"
	$(BIN)/pyinstaller --noconfirm --clean --distpath dist --workpath build/pyinstaller packaging/revstudio.spec

install-desktop:
	sh packaging/install-desktop.sh "$(DATADIR)" "$(DESKTOP_EXEC)"

uninstall-desktop:
	sh packaging/install-desktop.sh --uninstall "$(DATADIR)"

lint: setup-dev
	$(BIN)/ruff check revstudio tests benchmarks
	$(BIN)/lint-imports --no-cache

bench: setup-dev
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build dist
