# ralph-lsp — every entry point a developer or CI needs.
# Each target sets up what it needs by itself (virtualenv, npm packages, Debian packages).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CACHE := $(CURDIR)/.cache
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help venv demo check unit test lint typecheck pytest agent-clis nvim-setup client client-test e2e screenshots vsix bench bench-quick bench-soak soak clean

help:
	@echo "make demo       run the bundled demo agent over examples/hello (a scratch copy)"
	@echo "make check      the inner loop: lint, mypy and the unit tests (at most 3 min on 2 cores)"
	@echo "make unit       the unit tests alone: all of tests/ but the folders and marks in UNIT_SKIP"
	@echo "make test       every check: lint, types, Python tests, client tests, real VS Code e2e"
	@echo "make lint       ruff, and import-linter for the layers"
	@echo "make typecheck  mypy --strict on ralph_lsp, tsc on the client"
	@echo "make pytest     Python unit, engine, fault, LSP and headless Neovim tests"
	@echo "make client-test  editor-client unit tests (node --test)"
	@echo "make e2e        the extension in a real VS Code (code-server + chromium)"
	@echo "make screenshots  take the README's screenshots again in a real VS Code (the e2e files"
	@echo "                that take them), into docs/images/"
	@echo "make vsix       package the extension into editor-client/*.vsix"
	@echo "make bench      every benchmark but the 5,000-iteration soak (at most 15 min on 2 cores);"
	@echo "                prints a table, writes bench/results.json and the charts"
	@echo "make bench-soak the 5,000-iteration soak alone (about 6 min); merged into bench/results.json"
	@echo "make bench-quick  make bench with few repetitions and without 10,000 changes; writes nothing"
	@echo "make soak       100 seeded SIGKILLs of a run's CLI, runner or server; each project checked consistent"

# The checkout is installed in setuptools' default (lenient) editable mode; pyproject.toml's
# package-dir makes that a plain path entry (.pth), with no import finder to pay at each start.
$(STAMP): pyproject.toml constraints.txt Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "python3 -m venv failed; installing python3-venv"; \
	  apt-get update -qq && apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	@bash scripts/demo.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check ralph_lsp tests $(wildcard bench)
	$(VENV)/bin/ruff format --check ralph_lsp tests $(wildcard bench)
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The pinned real Codex and Gemini CLIs for tests/codex_gemini_offline (npm cache in .cache/).
agent-clis:
	@bash tests/codex_gemini_offline/install_clis.sh >/dev/null

# Every Python test, on two workers (pytest-xdist; each has its own session tag, and the CLI
# installers take a lock): about 8 minutes on 2 cores against 16 on one. Without make's own
# variables, as for `unit`.
pytest: $(STAMP) agent-clis
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $(VENV)/bin/pytest -q -n 2

# The unit tests: every test but the LSP server, the real agent CLIs, Ray, Neovim, the fault
# matrix and soak, and the tests marked slow or ray. A new test lands here unless it is marked or
# lives in one of these folders. Two workers (pytest-xdist): each has its own session tag.
UNIT_SKIP := --ignore=tests/lsp --ignore=tests/claude_offline --ignore=tests/codex_gemini_offline \
  --ignore=tests/ray --ignore=tests/nvim --ignore=tests/faults -m "not slow and not ray"

# Without make's own variables: a test project's `make test` (a run's verification) must not
# inherit this make's jobserver, which it cannot reach (under `make check`, -j3: exit 139).
unit: $(STAMP)
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $(VENV)/bin/pytest -q -n 2 $(UNIT_SKIP)

# lint and mypy take seconds: they run beside the unit tests, each target's output printed whole.
check: $(STAMP)
	@$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck unit

nvim-setup:
	@bash scripts/nvim-setup.sh

client: 
	@bash editor-client/scripts/build.sh

client-test:
	@bash editor-client/scripts/unit-test.sh

e2e: $(STAMP)
	@bash editor-client/scripts/e2e.sh

# The pictures of the README and the extension's page, from the e2e files that take them.
screenshots: $(STAMP)
	@bash editor-client/scripts/screenshots.sh

vsix:
	@bash editor-client/scripts/build.sh --vsix

test: lint typecheck nvim-setup pytest client-test e2e

bench: $(STAMP)
	$(PY) -m bench

bench-quick: $(STAMP)
	$(PY) -m bench --quick

# The soak that alone takes about as long as the rest: kept out of `make bench` (bench/__main__.py).
bench-soak: $(STAMP)
	$(PY) -m bench --only soak5000 --merge

# SOAK_TRIALS=N for another count; `$(PY) -m tests.faults.crash_trials --seed S` repeats one.
soak: $(STAMP)
	$(PY) -m tests.faults.crash_trials $(or $(SOAK_TRIALS),100)

clean:
	rm -rf $(VENV) editor-client/node_modules editor-client/dist test-results
