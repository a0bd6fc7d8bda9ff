# `make test` and `make run` each do their whole set-up from a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test run bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,notebooks]"
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -n 2 -q

bench: $(STAMP)
	$(PY) benchmarks/env_throughput.py

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

run: $(STAMP)
	$(PY) evaluate.py showcase --out results/showcase
