"""`dbarena fleet run` and `dbarena fleet status` on the controller: Ansible does the
reaching (playbooks/), the hosts measure themselves (host.py), the controller waits,
shows one line per host, fetches each host's store and merges it.

A host that is unreachable or fails does not stop the others; what it stored is still
fetched. Running the same command again continues: a host whose store holds the study
complete is skipped, one that stopped half-way runs only what it has not stored yet,
one still running is waited for (never started twice).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable, Mapping

from dbarena.store.merge import merge as merge_stores
from dbarena import engines, workloads
from dbarena.lifecycle import state
from dbarena.limits import one_line
from dbarena.lifecycle.state import temporary
from dbarena.errors import EnvironmentProblem
from dbarena.fleet import failure, playforks, untemplated
from dbarena.stats import outliers
from dbarena.fleet.failure import Failure
from dbarena.fleet.inventory import SERVER_GROUP, Host
from dbarena.records import JSONObject, StoredRun, json_object
from dbarena.store.database import Store
from dbarena.study import Study

# Terminal states of a host's run, as host.status reports them.
FINAL = ("complete", "failed", "stopped")
# How long one status poll, and one fetch of the hosts' stores, may take: a connection
# that hangs makes its host unreachable for that round instead of hanging the fleet.
POLL_TIMEOUT_S = 120.0
# fleet cleanup: a throwaway server's stop (serverhost.STOP_WAIT_S) and the rest.
CLEANUP_TIMEOUT_S = 300.0
# How long an interrupted play may take to end (Ansible.play): about one step's time.
INTERRUPTED_PLAY_S = 60.0
FETCH_TIMEOUT_S = 1800.0
# Starting includes apt-get and pip installs on a fresh host: generous, but not forever.
START_TIMEOUT_S = 3600.0


def ansible_command(name: str) -> str:
    """An Ansible program: beside this Python (the venv `make` builds), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise EnvironmentProblem(f"{name} not found: dbarena fleet drives Ansible; install it with "
                                 "`pip install 'dbarena[fleet]'` (make does)")
    return found


def packages(study: Study) -> list[str]:
    """The Debian packages a host needs for this study (servers only for throwaway instances)."""
    need = {"python3-venv"}
    for engine in study.engines:
        # "auto" takes the family's first flavour: the hosts' binaries are not known here.
        flavour = engines.first(engine.name) if engine.flavour == engines.AUTO else \
            engines.FLAVOURS[engine.name][engine.flavour]
        need |= flavour.host_packages(target=bool(engine.target))
    for entry in study.workloads:
        if workloads.get(entry.workload).tool.binary == "sysbench":
            need.add("sysbench")
    return sorted(need)


def project_root() -> Path:
    import dbarena

    root = Path(dbarena.__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        raise EnvironmentProblem("dbarena fleet builds the wheel the hosts install from dbarena's source tree, "
                                 f"which is not at {root}: run it from a clone of dbarena")
    return root


# How many built wheels the controller keeps (state_dir()/wheels): one per source tree
# it runs from is what saves the build; a few more cost a few hundred KB each.
KEPT_WHEELS = 4


def source_digest(root: Path) -> str:
    """What the wheel is built from, hashed: every source file's path and content (and
    the builder's versions), so that an unchanged tree reuses the wheel built from it."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    try:
        builder = version("setuptools")
    except PackageNotFoundError:
        builder = "?"
    digest.update(f"{sys.version}\0{builder}\0".encode())
    files = [root / "pyproject.toml", root / "README.md",
             *(p for p in (root / "src").rglob("*") if p.is_file() and "__pycache__" not in p.parts
               and not any(part.endswith(".egg-info") for part in p.parts))]
    for path in sorted(files):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:32]


def build_wheel(dest: Path) -> Path:
    """dbarena's wheel, built on the controller (the hosts need no access to the repository),
    copied into dest.

    Built from a copy of the sources, so that the build's own files (build/, egg-info)
    never land in the user's tree or race with a running dbarena; and reproducible
    (fixed zip timestamps), so that its hash changes only with its content and a host
    that has this very wheel installed is not reinstalled on every fleet run. Kept in
    the state directory under the hash of its sources: a `fleet run` of an unchanged
    tree reuses it instead of spending seconds (a pip process, setuptools) on a build."""
    root = project_root()
    cache = state.state_dir() / "wheels"
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    built = cache / source_digest(root)
    wheels = sorted(built.glob("dbarena-*.whl"))
    if not wheels:
        made = Path(tempfile.mkdtemp(prefix="building-", dir=cache))
        try:
            _build(root, made)
            with contextlib.suppress(OSError):  # (another controller built it meanwhile: theirs is as good)
                made.rename(built)
        finally:
            shutil.rmtree(made, ignore_errors=True)
        wheels = sorted(built.glob("dbarena-*.whl"))
        if not wheels:
            raise EnvironmentProblem(f"building dbarena's wheel left none in {built}")
        _prune(cache, keep=built)
    os.utime(built)  # the wheels least recently used go first (_prune)
    dest.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(wheels[-1], dest / wheels[-1].name))


def _build(root: Path, dest: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="dbarena-wheel-") as tmp:
        tree = Path(tmp) / "dbarena"
        tree.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(root / name, tree / name)
        shutil.copytree(root / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        env = {**os.environ, "SOURCE_DATE_EPOCH": "315532800"}  # 1980-01-01, the zip format's epoch
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                               "--disable-pip-version-check", "-w", str(dest), str(tree)],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
    if done.returncode != 0 or not list(dest.glob("dbarena-*.whl")):
        raise EnvironmentProblem(f"building dbarena's wheel failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")


def _prune(cache: Path, keep: Path) -> None:
    """All but the KEPT_WHEELS most recently used wheels (and builds a killed controller left)."""
    def used(path: Path) -> float:
        with contextlib.suppress(OSError):
            return path.stat().st_mtime
        return 0.0

    now = time.time()
    entries = sorted((p for p in cache.iterdir() if p.is_dir() and p != keep), key=used, reverse=True)
    for stale in entries[KEPT_WHEELS - 1:]:
        if not stale.name.startswith("building-") or now - used(stale) > 3600:  # (another controller's build)
            shutil.rmtree(stale, ignore_errors=True)


@dataclass
class HostState:
    host: Host
    status: JSONObject = field(default_factory=lambda: {"state": "starting"})  # as host-status printed it
    unreachable_since: float | None = None
    unreadable_since: float | None = None  # reachable, but its status task fails (a Python that does not start)
    problem: str | None = None
    output: tuple[str, ...] = ()  # the host's own last lines of output for the problem
    brief: str | None = None      # the problem in short, for the final table
    fetched: Path | None = None
    merged: tuple[int, int] | None = None

    @property
    def final(self) -> bool:
        return self.status.get("state") in FINAL

    @property
    def state_name(self) -> str:
        return "unreachable" if self.unreachable_since is not None else str(self.status.get("state", "?"))

    @property
    def in_trouble(self) -> bool:
        """Unreachable, failed, stopped half-way, or not readable: what `fleet status`
        exits 1 for (a host that runs, is complete or has not started is fine)."""
        return self.state_name in ("unreachable", "failed", "stopped", "unknown") or self.problem is not None

    def set_problem(self, problem: str | None, output: tuple[str, ...] = (), brief: str | None = None) -> None:
        self.problem, self.output, self.brief = problem, output, brief or problem

    def set_failure(self, found: failure.Failure, prefix: str = "") -> None:
        self.set_problem(prefix + found.summary, found.output, prefix + found.short)

    def line(self, this_run: bool = True) -> str:
        """One line for the host. this_run: the line of a `fleet run` that just found the
        host's study complete ("complete already, not run again", said once with its
        count); `fleet status` says only where the host is."""
        s = self.status
        state = self.state_name
        counts = ""
        if s.get("planned"):
            counts = f"{s.get('done', 0)}/{s['planned']} points" + (f", {s['failed']} failed" if s.get("failed")
                                                                      else "")
        # The label beside the inventory name only where it says something more.
        name = self.host.name if self.host.label == self.host.name else f"{self.host.name} ({self.host.label})"
        if s.get("skipped") and state == "complete" and this_run:
            parts = [f"{name}: complete already" + (f" ({counts} stored)" if counts else "") + ", not run again"]
        else:
            parts = [f"{name}: {state}"] + ([counts] if counts else [])
        if state == "running":
            if s.get("current"):
                parts.append(str(s["current"]))
            elif s.get("stage") and not str(s["stage"]).startswith("--quick:"):
                # --quick's note on short points is about the whole run, not where the host is.
                parts.append(str(s["stage"]))
            parts.append(_eta(s))
        if s.get("error"):
            parts.append(str(s["error"]))
        if self.problem:
            parts.append(self.problem)
        return "; ".join(parts)

    def block(self, this_run: bool = True) -> str:
        """The line, and under it the host's own last lines of output for its problem."""
        return "\n".join([self.line(this_run), *(f"    | {line}" for line in self.output)])


def _eta(status: JSONObject) -> str:
    """The ETA as the host's progress gives it: measured once a point has ended (the
    plan's estimates scaled by how long the ended points really took), the study's
    estimate before that, unknown before the plan is."""
    eta = status.get("eta_s")
    if not isinstance(eta, (int, float)) or isinstance(eta, bool):
        eta = None  # (what another version of dbarena on the host may print: not a duration)
    measured = status.get("eta_basis") == "measured" if "eta_basis" in status else bool(status.get("done"))
    if eta is None or (not measured and not eta):
        return "ETA not known yet"
    if not measured:
        return f"ETA about {_duration(eta)} (the study's estimate; no point has ended yet)"
    return f"ETA {_duration(eta)}"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"


@dataclass
class HostResult:
    """What one host did in a play: each task's result (as Ansible's JSON gives it), and
    `failure` (what the host said) when it was unreachable or a task failed."""

    unreachable: bool = False
    failed: bool = False
    tasks: dict[str, JSONObject] = field(default_factory=dict)
    failure: Failure = field(default_factory=lambda: Failure("", ()))

    def task(self, name: str) -> JSONObject:
        return self.tasks.get(name, {})


class Ansible:
    """Runs the shipped playbooks; results come back through Ansible's json callback."""

    def __init__(self, inventory: Path, workdir: Path, forks: int, passwords: Mapping[str, str]):
        self.inventory = inventory
        self.workdir = workdir
        self.forks = forks
        self.playbook = ansible_command("ansible-playbook")
        # The passwords the hosts' runs need (variable -> value): in the plays' environment
        # (their lookup('env') writes them to a private file on each host), never shown,
        # whatever a host echoes.
        self.passwords = dict(passwords)
        self.secrets = [v for v in self.passwords.values() if v]
        # Plays as forks of one process that has imported Ansible (playforks.py), where
        # this Python is the one the Ansible found runs in (installed beside it).
        self.plays = playforks.for_playbook(self.playbook)

    def close(self) -> None:
        """The plays' helper ended (playforks.py); Ansible.play starts another if asked again."""
        self.plays.close()

    def play(self, name: str, hosts: list[Host], extra: Mapping[str, object],
             timeout_s: float | None = None) -> dict[str, HostResult]:
        """host name -> what it did (HostResult).
        A play that does not end within timeout_s (a connection that hangs) counts every
        host as unreachable this time, rather than hanging the fleet."""
        # (Made again if it is gone: a play must not fail, and what the hosts measured be
        # lost, for the want of the controller's own scratch directory.)
        self.workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
        vars_file = self.workdir / "vars.yml"
        args = extra.get("args")
        variables = {"dbarena_hosts": ",".join(h.name for h in hosts),
                     "dbarena_fleet": {h.name: {"workdir": h.workdir, "deps": h.deps,
                                                "args": args.get(h.name, []) if isinstance(args, Mapping) else []}
                                       for h in hosts},
                     **{k: v for k, v in extra.items() if k != "args"}}
        # As data Ansible never templates: labels, paths and arguments come from the
        # inventory and the study (untemplated.py).
        untemplated.write(vars_file, variables)
        env = self._environment()
        with resources.as_file(resources.files("dbarena.fleet") / "playbooks" / name) as book, \
                resources.as_file(resources.files("dbarena.fleet") / "callbacks") as callbacks:
            env["ANSIBLE_CALLBACK_PLUGINS"] = os.pathsep.join(
                p for p in (str(callbacks), os.environ.get("ANSIBLE_CALLBACK_PLUGINS", "")) if p)
            argv = [self.playbook, "-i", str(self.inventory), "-f", str(self.forks), "-e", f"@{vars_file}",
                    str(book)]
            # A play interrupted here (Ctrl-C, SIGTERM) is let end, within INTERRUPTED_PLAY_S:
            # it runs in a session of its own, so the signal did not stop it, and a play
            # still under way would start what it was asked to (a point's load generator,
            # detached) after the stop that the interrupted caller sends next had looked
            # for it. One that takes longer, or a second interrupt, is killed.
            played = self.plays.play(argv, env, folder=self.workdir, timeout_s=timeout_s,
                                     let_end_s=INTERRUPTED_PLAY_S,
                                     secret=frozenset(engines.PASSWORD_VARIABLES) | frozenset(self.passwords))
        if played is None:
            return {h.name: HostResult(unreachable=True,
                                       failure=failure.Failure(f"no answer within {timeout_s:.0f} s", ()))
                    for h in hosts}
        return self._results(name, hosts, played.stdout, played.stderr)

    def _environment(self) -> dict[str, str]:
        """ansible-playbook's environment: this process's without the password variables
        the user exported, the fleet's passwords instead, and the callback's settings."""
        env = {k: v for k, v in os.environ.items() if k not in engines.PASSWORD_VARIABLES}
        env.update(self.passwords)
        env.update({"ANSIBLE_STDOUT_CALLBACK": "dbarena_json", "ANSIBLE_PIPELINING": "True", "ANSIBLE_NOCOLOR": "1",
                    "ANSIBLE_RETRY_FILES_ENABLED": "False", "ANSIBLE_DEPRECATION_WARNINGS": "False"})
        env.setdefault("ANSIBLE_TIMEOUT", "30")  # SSH connection timeout, unless the user set one
        return env

    def _results(self, name: str, hosts: list[Host], stdout: str, stderr: str) -> dict[str, HostResult]:
        """What each host did, read from the json callback's report (its failures said
        with the secrets hidden)."""
        try:
            report = json.loads(stdout[stdout.index("{"):])
        except ValueError:
            # Ansible's own error (its "[ERROR]: ..." line), rather than the last line of
            # the context it prints under it ("Origin: ...").
            lines = stderr.strip().splitlines() or ["no output"]
            found = next((line for line in lines if "ERROR" in line), lines[-1])
            raise EnvironmentProblem(f"ansible-playbook {name} failed: {found.strip()}") from None
        out = {h.name: HostResult() for h in hosts}
        said: set[str] = set()  # the hosts whose failure a task said
        for play in report.get("plays", []):
            for task in play.get("tasks", []):
                for host, result in task.get("hosts", {}).items():
                    entry = out.setdefault(host, HostResult())
                    entry.tasks[task["task"]["name"]] = result
                    if result.get("unreachable"):
                        entry.unreachable = True
                        entry.failure = failure.failure(None, result, self.secrets)
                        said.add(host)
                    elif result.get("failed"):
                        entry.failed = True
                        entry.failure = failure.failure(task["task"]["name"], result, self.secrets)
                        said.add(host)
        for host, stats in report.get("stats", {}).items():
            if host in out and stats.get("unreachable"):
                out[host].unreachable = True
        for host, entry in out.items():
            if (entry.unreachable or entry.failed) and host not in said:
                entry.failure = failure.Failure("unreachable" if entry.unreachable else "failed", ())
        return out


def passwords_from_environment() -> dict[str, str]:
    """The passwords a user exported for the hosts' runs (engines.PASSWORD_VARIABLES):
    what `fleet run` hands to them."""
    return {name: os.environ[name] for name in engines.PASSWORD_VARIABLES if os.environ.get(name)}


@dataclass
class Fleet:
    """One `dbarena fleet run` (or `status`)."""

    inventory: Path
    hosts: list[Host]
    say: Callable[[str], None]
    poll_s: float = 10.0
    unreachable_timeout_s: float = 120.0
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="dbarena-fleet-")))
    # Asked after every poll while hosts run: a reason to stop waiting for them (the
    # cost guard of `run --study`'s machines), or None. Their stores are then fetched
    # as they are, so that what was measured is kept.
    stop: Callable[[], str | None] | None = None
    stopped: str | None = None
    # The passwords the hosts' runs log in with (variable -> value: engines.PASSWORD_VARIABLES);
    # by default those exported here.
    passwords: Mapping[str, str] = field(default_factory=passwords_from_environment, repr=False)
    # What each host is, where it was made for the run (a study's [machines]): host name
    # -> the facts its runs record as they begin (run --machine-facts).
    machines: Mapping[str, JSONObject] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.states = {h.name: HostState(h) for h in self.hosts}
        self.ansible = Ansible(self.inventory, self.workdir, forks=max(len(self.hosts), 1), passwords=self.passwords)
        # Removed by close(); if the controller is killed first, by the reaper.
        self._scratch = state.scratch(self.workdir)

    def close(self) -> None:
        self.ansible.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
        self._scratch.remove()

    # ------------------------------------------------------------ status

    def poll(self, hosts: list[Host], wait_s: float = 0.0) -> None:
        """Each host's status; wait_s: a host whose run goes on answers after that long,
        one whose run ends meanwhile at once (host.status_when_ended)."""
        wait_s = min(wait_s, POLL_TIMEOUT_S / 2)
        results = self.ansible.play("status.yml", hosts, {"dbarena_wait": wait_s},
                                    timeout_s=POLL_TIMEOUT_S + wait_s)
        now = time.monotonic()
        for h in hosts:
            state, result = self.states[h.name], results[h.name]
            if result.unreachable:
                state.unreachable_since = state.unreachable_since or now
                state.set_failure(result.failure)
                continue
            state.unreachable_since = None
            if result.failed:
                # Its working directory was refused (status.yml's one failure): nothing
                # there is run.
                state.status = {"state": "failed"}
                state.set_failure(result.failure)
                continue
            state.set_problem(None)
            task = result.task("status")
            if task.get("rc") == 127 and "No such file" in str(task.get("stderr", "")):
                state.status = {"state": "idle", "error": "dbarena is not installed there yet"}
                continue
            if task.get("rc") not in (0, None) or not task.get("stdout"):
                # A host without dbarena is "idle" (above); any other exit, or no status
                # printed (a python3 that does not start), is a problem.
                state.status = {"state": "unknown"}
                state.set_failure(failure.failure("status", task, self.ansible.secrets))
                state.unreadable_since = state.unreadable_since or now
                continue
            try:
                state.status = json.loads(str(task["stdout"]).strip().splitlines()[-1])
            except ValueError:
                state.status = {"state": "unknown"}
                state.set_problem(f"host-status printed no status: {one_line(str(task['stdout']), 300) or '?'}")
                state.unreadable_since = state.unreadable_since or now
                continue
            state.unreadable_since = None
            said = state.status.get("output")
            if state.status.get("state") in ("failed", "stopped") and isinstance(said, list) and said:
                # The run's own last lines (its run.log on the host), for why it failed.
                state.output = tuple(line for text in said
                                     for line in failure.lines_of(text, self.ansible.secrets))[-failure.MAX_LINES:]

    # ------------------------------------------------------------ cleanup

    def cleanup(self, hosts: list[Host]) -> int:
        """`fleet cleanup`: each host's own lines of what it stopped and removed
        (fleet/hostcleanup.py); 0 when every host answered, else 1. The load generators
        first, then --together's server: stopped at once, the server would end their
        points with errors of its own before they were stopped (and each host could not
        say what it stopped)."""
        servers = [h for h in hosts if SERVER_GROUP in h.groups]
        first = [h for h in hosts if h not in servers]
        results = {}
        for part in (first, servers):
            if part:
                results.update(self.ansible.play("cleanup.yml", part, {}, timeout_s=CLEANUP_TIMEOUT_S))
        trouble = 0
        for h in hosts:
            result = results[h.name]
            task = result.task("cleanup")
            if result.unreachable or result.failed:
                found = result.failure
                self.say(f"{h.name}: {'unreachable' if result.unreachable else 'failed'}: {found.summary}")
                self.say("\n".join(f"    | {line}" for line in found.output))
                trouble += 1
            elif task.get("rc") == 2 and "No such file" in str(task.get("msg", "")):
                self.say(f"{h.name}: nothing to clean up (dbarena is not installed there)")
            elif task.get("rc") not in (0, None):
                self.say(f"{h.name}: failed: {failure.failure('cleanup', task, self.ansible.secrets).summary}")
                trouble += 1
            else:
                for line in failure.lines_of(task.get("stdout"), self.ansible.secrets) or ["nothing to clean up"]:
                    self.say(f"{h.name}: {line}")
        return 1 if trouble else 0

    # ------------------------------------------------------------ run

    def run(self, study: Study, study_arg: str, study_file: Path | None, run_args: list[str], store: Path | str,
            serial: bool) -> int:
        wheel = build_wheel(self.workdir)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        shared = isinstance(store, str)  # a PostgreSQL URL: hosts write there themselves
        args = {h.name: self._host_args(h, f"{h.workdir}/study.toml" if study_file else study_arg, run_args,
                                        store if isinstance(store, str) else None, self.machines.get(h.name))
                for h in self.hosts}
        groups = [[h] for h in self.hosts] if serial else [self.hosts]
        for group in groups:
            self.say(f"starting on {', '.join(h.name for h in group)}: packages, dbarena, the study")
            started = self.ansible.play("start.yml", group, {
                "args": args, "dbarena_wheel": str(wheel), "dbarena_wheel_sha256": digest,
                "dbarena_packages": packages(study), "dbarena_study_file": str(study_file or "")},
                timeout_s=START_TIMEOUT_S)
            for h in group:
                result = started[h.name]
                if result.unreachable or result.failed:
                    state = self.states[h.name]
                    if result.unreachable:
                        state.unreachable_since = time.monotonic()
                        state.status = {"state": "stopped"}
                    else:
                        state.status = {"state": "failed"}
                    state.set_failure(result.failure, "start failed: " if result.failed else "")
                    self.say(state.block())
            self.wait([h for h in group if not self.states[h.name].problem])
            if not shared:
                self.fetch(group, store)  # type: ignore[arg-type]
        self.flag_outliers(store)
        return self.summary()

    @staticmethod
    def _host_args(host: Host, study_arg: str, run_args: list[str], shared_store: str | None,
                   machine: JSONObject | None = None) -> list[str]:
        out = ["--study", study_arg, *run_args, "--label", host.label]
        if machine is not None:
            out += ["--machine-facts", json.dumps(machine, sort_keys=True)]
        if host.price_per_month is not None:
            out += ["--price-per-month", repr(host.price_per_month), "--currency", host.currency or "USD"]
        elif host.price_per_hour is not None:
            out += ["--price-per-hour", repr(host.price_per_hour), "--currency", host.currency or "USD"]
        if shared_store is not None:
            out += ["--store", shared_store]
        return out

    def wait(self, hosts: list[Host]) -> None:
        """Poll until every host's run ended, or stayed unreachable too long."""
        shown: dict[str, str] = {}
        while True:
            pending = [h for h in hosts if not self.states[h.name].final and not self._given_up(h)]
            if not pending:
                return
            # A long poll: the hosts answer when their runs end, or after poll_s (so a
            # short run is seen ended at once, not a poll's sleep later, and a long one
            # costs its hosts no more plays than before).
            asked = time.monotonic()
            self.poll(pending, self.poll_s)
            for h in hosts:
                block = self.states[h.name].block()
                if shown.get(h.name) != block:
                    shown[h.name] = block
                    self.say(block)
            if self.stop is not None:
                self.stopped = self.stop()
                if self.stopped is not None:
                    self.say(self.stopped)
                    return
            if any(not self.states[h.name].final and not self._given_up(h) for h in hosts):
                # (Only where no host waited: one unreachable, or refused, answers at once.)
                time.sleep(max(0.0, self.poll_s - (time.monotonic() - asked)))

    def _given_up(self, host: Host) -> bool:
        """Unreachable, or its status unreadable, for --unreachable-timeout: not waited for."""
        state = self.states[host.name]
        since = state.unreachable_since or state.unreadable_since
        return since is not None and time.monotonic() - since >= self.unreachable_timeout_s

    def fetch(self, hosts: list[Host], store: Path) -> None:
        """Each reachable host's store, fetched and merged (also from a host that failed
        half-way: what it finished is kept)."""
        reachable = [h for h in hosts if self.states[h.name].unreachable_since is None
                     and self.states[h.name].status.get("state") not in ("idle", "starting")]
        if not reachable:
            return
        folder = self.workdir / "stores"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        results = self.ansible.play("fetch.yml", reachable, {"dbarena_fetch_dir": str(folder)},
                                    timeout_s=FETCH_TIMEOUT_S)
        with Store(store) as db:
            for h in reachable:
                state, result = self.states[h.name], results[h.name]
                copy = folder / f"{h.name}.db"
                if result.unreachable or result.failed or not copy.is_file():
                    found = result.failure if result.unreachable or result.failed else \
                        Failure("no store arrived", ())
                    if state.problem is None:  # else that first problem is why, and stays what is shown
                        state.set_failure(found, "its store could not be fetched: ")
                        self.say(state.block())
                    continue
                state.fetched = copy
                state.merged = merge_stores(db, copy, scratch=temporary)

    def flag_outliers(self, store: Path | str) -> None:
        """Hosts whose probe lies far from their kind's (stats/outliers.py): a line each,
        and the flag in the options of the host's runs, where the report shows it. Each
        host's latest probed invocation, found in its fetched store (or, with a shared
        store, under its label), matched in the merged store by run UUID."""
        with Store(store) as db:
            probed: list[outliers.HostProbe] = []
            runs_of: dict[str, list[StoredRun]] = {}
            for h in self.hosts:
                fetched = self.states[h.name].fetched
                source = Store(fetched, readonly=True) if fetched is not None else None
                try:
                    mine = [r for r in (source or db).runs()
                            if r.label == h.label and r.options.get("probe")]
                finally:
                    if source is not None:
                        source.close()
                if not mine:
                    continue
                latest = max(mine, key=lambda r: r.id)
                uuids = {r.uuid for r in mine if r.invocation == latest.invocation}
                runs_of[h.name] = [r for r in db.runs() if r.uuid in uuids]
                probed.append(outliers.HostProbe(h.name, latest.host_facts, json_object(latest.options.get("probe"))))
            for found in outliers.findings(probed):
                self.say(f"host {found.host}: {found.text}")
                if found.flagged:
                    for r in runs_of.get(found.host, []):
                        db.update_options(r.id, {"probe_outlier": found.text})

    def summary(self) -> int:
        """The final table; 0 when every host's study is complete, else 1."""
        self.say("")
        self.say(f"{'host':<16} {'label':<16} {'state':<12} {'points':>9}  merged")
        complete = True
        for state in self.states.values():
            s = state.status
            name = state.state_name
            complete &= name == "complete"
            points = f"{s.get('done', '-')}/{s.get('planned', '-')}" if s.get("planned") else "-"
            merged = f"{state.merged[0]} run(s), {state.merged[1]} point(s)" if state.merged else "-"
            self.say(f"{state.host.name:<16} {state.host.label:<16} {name:<12} {points:>9}  {merged}"
                     + (f"  ({state.brief})" if state.brief else ""))
        return 0 if complete else 1
