# flowemu — `make demo` and `make test` set everything up from scratch.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup test demo bench lint clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q --benchmark-disable tests

demo: $(STAMP)
	$(PY) -m flowemu.demo

# Real benchmark runs, saved under .benchmarks/; compared with the last saved run.
bench: $(STAMP)
	$(PY) -m pytest tests/benchmarks --benchmark-only --benchmark-autosave \
	  $$(ls .benchmarks/*/*.json >/dev/null 2>&1 && echo --benchmark-compare) \
	  --benchmark-columns=min,median,mean,max,rounds

lint: $(STAMP)
	$(VENV)/bin/ruff check flowemu tests

clean:
	rm -rf $(VENV) .pytest_cache .benchmarks build *.egg-info
