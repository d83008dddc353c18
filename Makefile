# The two set-up commands of the README: `make demo` (the main job) and `make test`.
# Both install what they need first, so they work from a fresh clone as root.
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.installed
# mypy with pyproject's [tool.mypy], its cache of its own: mypy keeps one cache per set of
# options, and a `mypy --strict FILE` run by hand into the default .mypy_cache would make
# the next `make check` check every module again (10 s of CPU or more) instead of those
# that changed (a second).
MYPY   := $(VENV)/bin/mypy --cache-dir .mypy_cache/make
# pytest, every Python a test starts, and `make demo`'s, with compiled bytecode kept, where
# the environment says not to write any (PYTHONDONTWRITEBYTECODE) too: kept under .venv,
# out of the tree, written on a module's first import (the install compiles none). Without
# it each pytest worker compiles and rewrites the assertions of every test module again
# (7 s of CPU or so), and every `python -m dbarena` a test starts compiles dbarena (0.3 s).
PYC    := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(abspath $(VENV))/pycache
PYTEST := $(PYC) $(VENV)/bin/pytest

.PHONY: demo test check deps clean

deps:
	scripts/install-deps

# The virtualenv's packages go in with uv (installed into it by its own pip first): about
# 10 s from a fresh clone where pip took about 55, all of it before a first test starts
# (the same releases: PyPI's newest within pyproject's bounds). Most of pip's time was
# compiling every module of every package, which no Python here reads: they keep their
# bytecode under .venv/pycache (PYC, above) and compile a module when first imported.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check 'uv>=0.5'
	$(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python -e '.[fleet,cloud,history,serve,test]'
	touch $(STAMP)

# Study A's whole protocol (pgbench, sysbench and mysqlslap on throwaway PostgreSQL and
# MariaDB) with --quick: the same levels and workloads, 5 s per point, tiny datasets;
# results go to ./dbarena.db, and the report of them to ./dbarena-report.html; then it says
# how to browse them (dbarena serve).
demo: deps $(STAMP)
	$(PYC) $(VENV)/bin/dbarena run --study seed-a --quick
	$(PYC) $(VENV)/bin/dbarena report -o dbarena-report.html
	@echo "Browse them: $(VENV)/bin/dbarena serve, then open http://127.0.0.1:8642/ (docs/serve.md)"

# Type checks of src/ (pyproject's [tool.mypy]) and the whole test suite, in two parts.
# First, at the same time, mypy (one CPU for 40 s or so from an empty cache, as CI's fresh
# clone has: beside the sessions it costs them some of that, not all 40 s of the suite's
# wall time before them; its output is printed after theirs, and an error fails the
# line as a failed test does) and two pytest sessions (pytest-xdist workers):
# - every e2e test (tests/e2e) but the fleet's and the two modules run beside them, on
#   four workers for the two CPUs: most of an e2e test's time is its benchmarks' fixed durations (5 s
#   points, waits for a signal's effect), which take as long on a quarter of the CPU as on a half, so more
#   workers run more of them at once (this session took 21 minutes with three, 24 with two, beside the fleet's and another session's
#   tests; once the fleet's plays took less CPU, 803 s with four against 852 s with three, its
#   workers each busy 87-97 % of it, the fleet's session 819 s against 794 s beside it; the
#   figures that need more CPU are marked alone, below). A test module to a
#   worker (--dist loadfile): a module's
#   tests often share a fixture of module scope (a server, a store of real runs that
#   takes a minute to make), made once so. (--dist loadgroup with xdist_group marks would
#   group finer, but pytest 9.2 and xdist 3.8 ignore the marks: pytest-xdist issue 1386.)
#   The modules go out in the order of collection (--no-loadscope-reorder), not those of
#   most tests first: the slowest modules first (tests/conftest.py SLOWEST_FIRST: the
#   seed studies' runs, the documented examples, ...), then the other
#   e2e modules, few tests of up to two minutes each. Its output is shown as it comes;
# - the fleet's tests (marker fleet: driven by Ansible, on real sshd hosts or a local AWS
#   API), three modules at a time (test_fleet_together_server.py's ten-odd minutes on one
#   worker, the other modules' on the other two): no less CPU than the first session's
#   (Ansible, its hosts' modules, their servers and tools: 1,540 s against 1,413 s, each
#   session alone, 14:02 and 12:42; bench/suite-cpu), so both share the two CPUs and end
#   after 20 minutes or more together. Their output goes to a file,
#   printed once both sessions have ended; the line fails if either session did. (Its
#   modules go out in tests/conftest.py's FLEET_ORDER, not xdist's most tests first,
#   which left a long one-test module last behind a worker's longest: 19 minutes
#   where 16 would do, simulated from one session's durations.) Two modules that are no
#   fleet's run in this session too (marker fleet_session, tests/conftest.py
#   BESIDE_THE_FLEET: the kill test's 20 kills, the CI job of docs/history.md), so that
#   both sessions end nearer together (23:16 and 21:21 against 23:52 and 18:28, one run
#   each: the two CPUs bound both, so a move of modules gains little).
#   Each fleet's hosts make what they make in a TMPDIR and a
#   state directory of their own (tests/sshd.py), and a test checks that nothing is left
#   there, not on the whole machine; their sshd listen on free ports.
# Every other test that checks what it leaves looks at what it started itself (its
# TMPDIR, its server's shared memory segments), never at the whole machine.
# Then, alone on the machine, one at a time, the tests whose figures depend on an
# otherwise idle machine (marker alone: a point's bound, decided from the share of
# clients waiting on a lock, which CPU taken by other servers lowers past its threshold,
# seen in CI; a cgroup-slowed fleet host's probe against its twin's; a capacity search
# whose lowest offered rate must meet its latency objective; history's change point
# between two halves of short runs, lost when the load beside it made the first half
# drift; two fleet load generators' QPS against their combined point's, which needs
# both tools running at once: half of it at load 13; a cost per transaction that
# differs between two settings beyond three short sessions' spread). Meanwhile the unit
# tests (tests/unit: no server, tool or sshd; 215 s of CPU on two workers) run at idle
# priority (scripts/at-idle-priority), on what CPU the alone tests leave: in a fresh
# clone's make test, 215 s beside the alone tests' 314 (which took 317 s without them),
# where in the sessions before they took about 100 s of the two CPUs' wall time. (No
# unit test is marked fleet or alone: tests/conftest.py refuses one outside tests/e2e.)
# The fleet's session and the alone tests collect tests/e2e only, where all of theirs are
# (tests/conftest.py refuses a test so marked elsewhere), not the unit modules too.
# Each session ends with its 15 slowest tests (--durations): where the suite's time goes;
# the last line is make test's whole time from make's start (its elapsed time, ps), the
# Debian packages and the virtualenv included: what a fresh clone, CI's, takes.
# The fleet hosts' shared dependencies (numpy, scipy, ...: most of a minute to install)
# are kept under .venv, for the fleet's tests, the alone ones and the next `make test`
# (tests/conftest.py).
FLEET_DEPS := DBARENA_TEST_FLEET_DEPS=$(abspath $(VENV))/fleet-deps
test: deps $(STAMP)
	@began=$$(date +%s); mypy_log=$$(mktemp); fleet_log=$$(mktemp); \
	$(MYPY) >$$mypy_log 2>&1 & \
	types=$$!; \
	echo "mypy and the fleet's tests (markers fleet, fleet_session; -n 3) run meanwhile; their output follows this session's"; \
	$(FLEET_DEPS) $(PYTEST) -q -n 3 --dist loadfile --no-loadscope-reorder -m '(fleet or fleet_session) and not alone' --durations=15 tests/e2e \
	    >$$fleet_log 2>&1 & \
	fleet=$$!; \
	$(PYTEST) -q -n 4 --dist loadfile --no-loadscope-reorder -m 'not fleet and not fleet_session and not alone' --durations=15 tests/e2e; \
	first=$$?; \
	wait $$types; typed=$$?; \
	wait $$fleet; second=$$?; \
	echo "== mypy, run meanwhile:"; cat $$mypy_log; rm -f $$mypy_log; \
	echo "== the fleet's tests (markers fleet, fleet_session), run meanwhile:"; cat $$fleet_log; rm -f $$fleet_log; \
	echo "== both sessions and mypy: $$(( $$(date +%s) - began )) s"; \
	test $$typed -eq 0 && test $$first -eq 0 && test $$second -eq 0
	@began=$$(date +%s); unit_log=$$(mktemp); \
	$(PYC) scripts/at-idle-priority $(VENV)/bin/pytest -q -n 2 --durations=15 tests/unit >$$unit_log 2>&1 & \
	unit=$$!; \
	trap 'kill -TERM -- -'$$unit' 2>/dev/null' INT TERM; \
	echo "the unit tests (tests/unit, -n 2) run meanwhile at idle priority; their output follows"; \
	$(FLEET_DEPS) $(PYTEST) -q -m alone --durations=15 tests/e2e; alone=$$?; \
	echo "== the tests marked alone: $$(( $$(date +%s) - began )) s"; \
	wait $$unit; units=$$?; \
	echo "== the unit tests, run meanwhile at idle priority:"; cat $$unit_log; rm -f $$unit_log; \
	echo "== the tests marked alone and the unit tests: $$(( $$(date +%s) - began )) s"; \
	echo "== make test in all, from its start (Debian packages and the virtualenv included): $$(ps -o etimes= -p $$PPID | tr -d ' ') s"; \
	test $$alone -eq 0 && test $$units -eq 0

# The fast tier, about a minute: mypy, then every test that starts no database server,
# benchmark tool or sshd (markers e2e, fleet) and takes no more than a second or two
# (marker slow), on two CPUs. Run it before every commit; `make test` runs everything.
check: deps $(STAMP)
	$(MYPY)
	$(PYTEST) -q -m 'not e2e and not fleet and not slow' -n 2

clean:
	rm -rf $(VENV) build src/*.egg-info
