# mdtboard: `make run` starts everything; `make test` checks everything.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export DJANGO_SETTINGS_MODULE ?= mdtboard.settings.local

.PHONY: run test test-fast lint bench soak evaluate evaluate-memory backup restore install install-dev chromium poppler clean-var help

help:
	@echo "make run       install, start embedded PostgreSQL+Redis, migrate, seed, serve on :8000"
	@echo "make test      install test tools (and Chromium), lint, run the whole test suite"
	@echo "make test-fast the inner loop: every test but the slow, integration and browser ones"
	@echo "make lint      ruff, mypy, djlint, import rules (lint-imports)"
	@echo "make bench     print benchmark figures as JSON lines"
	@echo "make soak      fault injection under load (N=6 M=4 S=120); non-zero exit if anything is lost"
	@echo "make backup    dump the database to var/backups/ (OUTPUT=path to choose the file)"
	@echo "make restore FILE=var/backups/....dump   replace ALL data with that backup"

$(PY):
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "mdtboard needs Python 3.11 or newer"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt requirements-nodeps.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	@touch $@

$(VENV)/.installed-dev: requirements.txt requirements-nodeps.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	@touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: install
	$(PY) manage.py runstack

chromium:
	@bash scripts/ensure-chromium.sh

poppler:
	@bash scripts/ensure-poppler.sh

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	DJANGO_SETTINGS_MODULE=mdtboard.settings.test $(VENV)/bin/mypy clinical mdtboard consult knowledge
	$(VENV)/bin/djlint templates --check --quiet
	$(VENV)/bin/djlint templates --lint --quiet
	$(VENV)/bin/lint-imports --no-cache
	$(PY) scripts/function_imports.py

test: install-dev chromium poppler lint
	DJANGO_SETTINGS_MODULE=mdtboard.settings.test $(PY) -m pytest

# The inner loop: no lint, no browser, no real worker or server, nothing marked slow; under two
# minutes. ARGS passes options on: `make test-fast ARGS=--lf` reruns what failed last time.
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: pytest then keeps the test
# modules it has rewritten instead of parsing every one again at each run.
test-fast: install-dev
	PYTHONDONTWRITEBYTECODE= DJANGO_SETTINGS_MODULE=mdtboard.settings.test $(PY) -m pytest -q -m "not slow and not integration and not e2e" $(ARGS)

bench: install-dev
	DJANGO_SETTINGS_MODULE=mdtboard.settings.test $(PY) -m benchmarks

# Kills workers, restarts Redis, drops DB connections under load; not part of `make test`.
N ?= 6
M ?= 4
S ?= 120
soak: install-dev
	DJANGO_SETTINGS_MODULE=mdtboard.settings.test $(PY) -m benchmarks soak --consultations $(N) --watchers $(M) --seconds $(S)

# Evaluates ../shared/cases/public and tests/cases; CASES=folder evaluates another folder.
evaluate: install
	$(PY) manage.py migrate --verbosity 0
	$(PY) manage.py load_kb_seed
	$(PY) manage.py evaluate $(if $(CASES),--cases "$(CASES)")

# The public cases without the experience memory, then after seeding it with reviews of
# tests/cases (issue 16); the seeded entries stay in the memory.
evaluate-memory: install
	$(PY) manage.py migrate --verbosity 0
	$(PY) manage.py load_kb_seed
	$(PY) manage.py memory_evaluate

# Backups hold clinical data: keep them encrypted and access-controlled (README, "Backups").
backup: install
	$(PY) manage.py backup $(if $(OUTPUT),--output "$(OUTPUT)")

# Asks for the database name before replacing all data; YES=1 skips the question.
restore: install
	@test -n "$(FILE)" || { echo "usage: make restore FILE=var/backups/mdtboard-....dump"; exit 2; }
	$(PY) manage.py restore "$(FILE)" $(if $(YES),--yes)
