# The two set-up commands of the README: `make demo` (the main job) and `make test`.
# Both install what they need first, so they work from a fresh clone as root.
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.installed

.PHONY: demo test check deps clean

deps:
	scripts/install-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[fleet,history,test]'
	touch $(STAMP)

# Study A's whole protocol (pgbench, sysbench and mysqlslap on throwaway PostgreSQL and
# MariaDB) with --quick: the same levels and workloads, 5 s per point, tiny datasets;
# results go to ./dbarena.db, and the report of them to ./dbarena-report.html.
demo: deps $(STAMP)
	$(VENV)/bin/dbarena run --study seed-a --quick
	$(VENV)/bin/dbarena report -o dbarena-report.html

# Type checks of src/ (pyproject's [tool.mypy]), then the whole test suite in two parts.
# First every test but those below on two CPUs (pytest-xdist), a test module to a worker
# (--dist loadfile): a module's tests often share a fixture of module scope (a server, a
# store of real runs that takes a minute to make), made once so. (--dist loadgroup with
# xdist_group marks would group finer, but pytest 9.2 and xdist 3.8 ignore the marks:
# pytest-xdist issue 1386.) Then, one after the other and alone on the machine, the tests
# that look at the whole of it: the fleet's (marker fleet: they bind fixed loopback
# addresses and check that no server is left running anywhere) and those that look at
# every entry of /dev/shm (marker serial).
test: deps $(STAMP)
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q -n 2 --dist loadfile -m 'not fleet and not serial'
	$(VENV)/bin/pytest -q -m 'fleet or serial'

# The fast tier, about a minute: mypy, then every test that starts no database server,
# benchmark tool or sshd (markers e2e, fleet) and takes no more than a second or two
# (marker slow), on two CPUs. Run it before every commit; `make test` runs everything.
check: deps $(STAMP)
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q -m 'not e2e and not fleet and not slow' -n 2

clean:
	rm -rf $(VENV) build src/*.egg-info
