"""The README's and docs/running.md's examples, as a new user would type them: read
from the files (not copied here, so an edited example is the one tested), run in a
temporary directory with the virtualenv's `dbarena` first on PATH.

- The README's run that fits a few minutes ("What a run looks like", 12 points of
  5 s) and its Python example (4 points of 5 s) run for real: they must succeed
  and show progress. They run side by side (the README's in the background while the
  Python example runs), each on its own throwaway PostgreSQL in its own directory:
  one after the other they took over two minutes of mostly waiting out 5 s points.
- The everyday commands that read or write the store those made run for real.
- Examples of a real benchmark (minutes to hours per point, another machine's label)
  run through `dbarena study check` with the same flags: every flag is valid here,
  the plan and the estimate come out, the data fit this machine.
- What needs another machine (a remote --target, a fleet inventory, another host's
  store or output file) is listed with the reason it is not run.
Total on this 2-core machine: about a minute and a half.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import cli_env, processes_mentioning

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
RUNNING = (ROOT / "docs" / "running.md").read_text()

# Commands that need what this machine has not, and why (a prefix of the example).
NOT_HERE = {
    "dbarena run --target": "a remote server of its own (db.example)",
    "PGPASSWORD=... .venv/bin/dbarena run --target": "a remote server of its own (db.example)",
    "MYSQL_PWD=...  .venv/bin/dbarena run --target": "a remote server of its own (mydb.rds.example)",
    "dbarena fleet run": "an Ansible inventory of other hosts (tests/e2e/test_fleet.py runs the fleet)",
    "dbarena fleet cleanup": "an Ansible inventory of other hosts (tests/e2e/test_fleet_server_killed.py cleans up after "
                             "a killed controller)",
    "dbarena import runs.txt": "another machine's tool output (tests/e2e/test_import.py imports real outputs)",
    "dbarena merge host1.db host2.db": "other hosts' stores (tests/unit/test_merge.py)",
    "dbarena store forget --run 7": "a store with a run 7 (tests/unit/test_forget.py forgets runs of real stores)",
    "dbarena compare m6i c7g": "stores of two machines labelled m6i and c7g",
    "dbarena run --resume": "an interrupted run (tests/e2e/test_resume_precision.py)",
    "dbarena serve": "serves until stopped (tests/e2e/test_serve_browser.py starts it and browses it)",
    "dbarena publish --label c7g --key": "a store with a label c7g and an SSH key (tests/e2e/test_exchange.py "
                                         "publishes real runs with keys it makes)",
    "dbarena verify c7g.tar": "a published bundle (tests/e2e/test_exchange.py verifies and tampers with real ones)",
    "dbarena import c7g.tar": "a published bundle (tests/e2e/test_exchange.py imports real ones)",
    "dbarena site bundles/": "a directory of bundles (tests/e2e/test_site.py builds a site and browses it)",
    "dbarena run --like c7g.tar": "a published bundle (tests/e2e/test_site.py runs --like of one it made)",
    # make demo's command, 20 points on two engines: tests/e2e/test_study_run.py runs it whole.
    "dbarena run --study seed-a --quick": "make demo's run (tests/e2e/test_study_run.py runs it whole)",
    "dbarena history --label nightly": "a store with nightly runs (tests/e2e/test_history_gate.py makes a history "
                                       "and runs history and gate on it)",
    "dbarena gate --baseline 41": "a store with run 41 and a label pr-7 (tests/e2e/test_history_gate.py gates "
                                  "runs of its history)",
}


def indented_blocks(markdown: str) -> list[str]:
    """Every block of 4-space indented lines (Markdown's code blocks), as text."""
    blocks, current = [], []
    for line in markdown.splitlines():
        if line.startswith("    ") and not line.lstrip().startswith("- "):
            current.append(line[4:])
        elif current and not line.strip():
            current.append("")
        else:
            if current:
                blocks.append("\n".join(current).strip())
            current = []
    if current:
        blocks.append("\n".join(current).strip())
    return [b for b in blocks if b]


def commands(block: str) -> list[str]:
    """The shell commands of a block: continuation lines joined, comments cut."""
    out = []
    for line in block.replace("\\\n", " ").splitlines():
        line = re.split(r"\s{2,}#\s", line)[0].strip()
        if line.startswith(("dbarena ", ".venv/bin/dbarena ", "PGPASSWORD=", "MYSQL_PWD=")) \
                or line == ".venv/bin/dbarena run":
            out.append(" ".join(line.split()) if "  " in line and "MYSQL_PWD" not in line else line)
    return out


def python_example() -> str:
    (block,) = [b for b in indented_blocks(README) if "session.run(" in b]
    return block


def readme_commands() -> list[str]:
    return [c for b in indented_blocks(README) for c in commands(b)]


def running_commands() -> list[str]:
    return [c for b in indented_blocks(RUNNING) for c in commands(b)]


def reason_not_here(command: str) -> str | None:
    return next((why for prefix, why in NOT_HERE.items() if command.startswith(prefix)), None)


def shell(command: str, cwd: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def user_env(tmpdir: Path) -> dict:
    return cli_env(tmpdir, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")


@pytest.fixture
def user(public_tmp, tmp_path):
    """A new user's working directory and environment: the virtualenv's programs first
    on PATH, a private temporary directory (checked empty at the end)."""
    yield tmp_path, user_env(public_tmp)
    assert processes_mentioning(str(public_tmp)) == []
    assert list(public_tmp.iterdir()) == []


def readme_run_block() -> list[str]:
    (block,) = [b for b in indented_blocks(README) if "--label demo --store demo.db" in b]
    return commands(block)


class Background:
    """The README's run, started once per module in a user's directory of its own and
    left to run in the background (the Python example runs meanwhile); `result()`
    waits for it. Its directories are checked as `user` checks its own."""

    def __init__(self, base: Path):
        self.cwd, self.tmpdir = base / "work", base / "tmp"
        self.cwd.mkdir()
        self.tmpdir.mkdir()
        self.tmpdir.chmod(0o755)
        self.env = user_env(self.tmpdir)
        (self.command,) = [c for c in readme_run_block() if c.startswith("dbarena run")]
        self.process = subprocess.Popen(["bash", "-c", self.command], cwd=self.cwd, env=self.env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
        self.done: subprocess.CompletedProcess | None = None

    def result(self, timeout: float = 300) -> subprocess.CompletedProcess:
        if self.done is None:
            try:
                out, err = self.process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.stop()
                raise
            self.done = subprocess.CompletedProcess(self.command, self.process.returncode, out, err)
        return self.done

    def stop(self) -> None:
        """Stopped as Ctrl-C stops it (its throwaway server too), if it still runs."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.communicate()


@pytest.fixture(scope="module")
def readme_run():
    base = Path(tempfile.mkdtemp(prefix="dbarena-test-", dir="/tmp"))
    base.chmod(0o755)
    run = Background(base)
    try:
        yield run
        run.result()
        assert processes_mentioning(str(run.tmpdir)) == []
        assert list(run.tmpdir.iterdir()) == []
    finally:
        run.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_the_examples_are_found():
    readme = readme_commands()
    assert any(c.startswith("dbarena run --engine postgres --workload pgbench-select-only,pgbench-tpcb") for c in readme)
    assert "dbarena study show seed-a > my.toml" in readme
    assert len(running_commands()) >= 7
    assert "session.run(quick_a, store=db)" in python_example()


def test_the_readme_python_example_runs_as_written_and_shows_progress(user, readme_run):
    """Run while the README's run goes on in the background (readme_run starts it;
    the next test checks it)."""
    cwd, env = user
    (cwd / "example.py").write_text(python_example() + "\n")
    done = subprocess.run([sys.executable, "example.py"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.fullmatch(r"ExitStatus.OK \[\d+\]|0 \[\d+\]", done.stdout.strip()), done.stdout
    lines = done.stderr.splitlines()
    assert lines[0].startswith("study seed-a: 4 points, about "), done.stderr
    assert "study seed-a --quick: 4 points on postgres" in done.stderr
    assert done.stderr.count("ok     postgres ") == 4, done.stderr

    # The everyday commands that read this store, as written.
    ran = []
    for command in readme_commands():
        if reason_not_here(command) or command.startswith(("dbarena run", "dbarena study check")) \
                or "--store demo.db" in command:  # the README's run's store: tested with it
            continue
        command = re.sub(r" \[(--[a-z-]+)\]", "", command)  # "[--summary]": optional, the plain form is tested
        done = shell(command, cwd, env)
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
        ran.append(command)
    assert "dbarena study show seed-a > my.toml" in ran and (cwd / "my.toml").is_file()
    assert "dbarena report -o report.html" in ran and (cwd / "report.html").is_file()
    checked = shell("dbarena study check my.toml --quick", cwd, env)
    assert checked.returncode == 0 and "points, estimated machine time" in checked.stdout, checked.stderr


def test_the_readme_run_and_the_commands_that_read_its_store(readme_run):
    """The README's run (started in the background by readme_run, if the Python
    example's test has not started it already), then the block's other commands."""
    done = readme_run.result()
    cwd, env = readme_run.cwd, readme_run.env
    assert done.returncode == 0, f"{done.args}\n{done.stderr[-3000:]}"
    # Progress: the estimate first, the plan, a line per point.
    lines = done.stderr.splitlines()
    assert re.fullmatch(r"run: 12 points, about \d+ (s|min) of machine time( \(a \d+ s host probe first\))?, "
                        r"\d+ MB of disk in .+ free\)",
                        lines[0]), done.stderr
    assert "run: 12 points on postgres: pgbench-select-only, pgbench-tpcb at threads 1, 2, " \
           "3 repeats interleaved" in done.stderr
    assert done.stderr.count("ok     postgres pgbench-") == 12
    for command in readme_run_block():
        if command == readme_run.command:
            continue
        done = shell(command, cwd, env)
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    assert (cwd / "report.html").stat().st_size > 10_000


def test_the_examples_of_real_benchmarks_are_valid_here(user):
    """Runs that take minutes to hours, or are meant for another machine: the same
    flags through `study check`, which must accept them and find room for the data."""
    cwd, env = user
    checked = []
    for command in readme_commands() + running_commands():
        if reason_not_here(command) is not None and not command.startswith("dbarena run --study seed-a --quick"):
            continue
        words = shlex.split(command)
        if words[0] not in ("dbarena", ".venv/bin/dbarena") or words[1] != "run":
            continue
        if command.startswith("dbarena run --engine postgres --workload pgbench-select-only,pgbench-tpcb"):
            continue  # run for real above
        # `run`'s own options that say where results go, not what is run.
        flags, skip = [], False
        for word in words[2:]:
            if skip:
                skip = False
            elif word in ("--store",):
                skip = True
            elif word not in ("--keep", "--no-init", "--yes"):
                flags.append(word)
        done = shell(shlex.join(["dbarena", "study", "check", *flags]), cwd, env, timeout=120)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert "estimated machine time" in done.stdout
        checked.append(command)
    assert len(checked) >= 8, checked


@pytest.mark.parametrize("command", sorted({c for c in readme_commands() + running_commands() if reason_not_here(c)}))
def test_what_needs_another_machine(command):
    pytest.skip(f"{command}: needs {reason_not_here(command)}")
