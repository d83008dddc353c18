# The two set-up commands of the README: `make demo` (the main job) and `make test`.
# Both install what they need first, so they work from a fresh clone as root.
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.installed

.PHONY: demo test deps clean

deps:
	scripts/install-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $(STAMP)

# A short sweep on a throwaway local PostgreSQL: all three pgbench workloads at the
# machine's default thread levels, 10 s per point (long enough for an interval per point);
# results go to ./dbarena.db.
demo: deps $(STAMP)
	$(VENV)/bin/dbarena run --duration 10 --scale 10

test: deps $(STAMP)
	$(VENV)/bin/pytest -q

clean:
	rm -rf $(VENV) build src/*.egg-info
