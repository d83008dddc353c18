"""The kernel's SMT switch (smt.py) and the session's use of it: refusals before
anything starts, one mode's variants after the other, and the original state back at
the end, on Ctrl-C and after a SIGKILL.

This machine's kernel cannot switch (a VM: `notsupported`), so the switch is a file
standing in for /sys/devices/system/cpu/smt/control: these tests check what dbarena
writes there and when, not what a kernel does with it. The real file's refusal is
checked against this machine in tests/e2e/test_study_run.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from dbarena import study
from dbarena.run import placement, plan, preflight, session
from dbarena.host import smt
from dbarena.lifecycle import cleanup, smt_switch, state
from dbarena.host import topology
from dbarena.errors import UsageError

HEAD = 'schema = 1\nname = "c"\n[sweep]\nlevels = [1]\nduration_s = 2\n[[workloads]]\nworkload = "pgbench-select-only"\n'


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv(state.ENV, str(tmp_path / "state"))


@pytest.fixture
def control(tmp_path, monkeypatch):
    path = tmp_path / "control"
    path.write_text("on\n")  # as sysfs shows it
    monkeypatch.setattr(smt, "CONTROL", path)
    return path


@pytest.mark.parametrize("said, fragment", [
    ("notsupported\n", "cannot switch SMT (the kernel says notsupported (a VM, or a CPU without SMT))"),
    ("notimplemented\n", "notimplemented"),
    ("forceoff\n", "forced off at boot"),
])
def test_a_kernel_that_cannot_switch_is_refused_with_its_reason(control, said, fragment):
    control.write_text(said)
    assert fragment in (smt_switch.refusal(["off", "on"], root=True) or "")


def test_refusals_without_the_file_without_root_and_for_thread_counts_on_x86(control, tmp_path):
    assert "is missing" in (smt_switch.refusal(["off"], tmp_path / "nothing", root=True) or "")
    assert "needs root" in (smt_switch.refusal(["off"], root=False) or "")
    assert "this x86_64 kernel switches SMT on and off only" in (
        smt_switch.refusal(["1", "2"], machine="x86_64", root=True) or "")
    assert smt_switch.refusal(["1", "2", "4", "8"], machine="ppc64le", root=True) is None
    assert smt_switch.refusal(["off", "on"], machine="x86_64", root=True) is None


def test_the_switch_sets_each_mode_and_puts_the_original_back(control):
    with smt_switch.Switch() as switch:
        switch.set("off")
        assert control.read_text() == "off"
        # Recorded while switched: a killed dbarena's reaper knows what to put back.
        (record,) = [d for _, d in state.records() if d["kind"] == "smt"]
        assert record["original"] == "on" and record["control"] == str(control)
        switch.set("on")
        switch.set("off")
    assert control.read_text() == "on" and state.records() == []


def test_ctrl_c_inside_the_switch_puts_the_original_back(control):
    control.write_text("off\n")  # a machine that runs with SMT off gets it off again
    with pytest.raises(KeyboardInterrupt):
        with smt_switch.Switch() as switch:
            switch.set("on")
            raise KeyboardInterrupt
    assert control.read_text() == "off" and state.records() == []


def standing_in(control, tmp_path) -> dict:
    """The environment of a process (and of the watchdog it starts) whose smt.CONTROL is
    the test's file: a reaper writes no other switch than smt.CONTROL (issue 46)."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(
        f"from pathlib import Path\nfrom dbarena.host import smt\nsmt.CONTROL = Path({str(control)!r})\n")
    return {**os.environ, state.ENV: str(tmp_path / "state"),
            "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}


def test_a_killed_owners_switch_is_put_back_by_its_watchdog(control, tmp_path):
    code = ("import time; from dbarena.lifecycle import smt_switch; from pathlib import Path; "
            f"s = smt_switch.Switch(Path({str(control)!r})); s.set('off'); print('ready', flush=True); time.sleep(60)")
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env=standing_in(control, tmp_path))
    assert owner.stdout is not None and owner.stdout.readline() == "ready\n"
    assert control.read_text() == "off"
    owner.kill()
    owner.wait()
    deadline = time.monotonic() + 10
    # The reaper writes the switch, then removes the record: wait for both.
    while time.monotonic() < deadline and (control.read_text() != "on" or state.records()):
        time.sleep(0.1)
    assert control.read_text() == "on" and state.records() == []


def test_the_next_command_puts_back_a_switch_whose_owner_and_watchdog_died(control, tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = state.start_time(child.pid)
    child.wait()
    folder = tmp_path / "state" / "records"
    folder.mkdir(parents=True)
    control.write_text("off")
    (folder / "smt-x.json").write_text(
        '{"kind": "smt", "control": "%s", "original": "on", "owner_pid": %d, "owner_start": %d, "hostname": "%s", '
        '"boot_id": "%s"}' % (control, child.pid, started or 0, state.machine()["hostname"], state.machine()["boot_id"]))
    said: list[str] = []
    assert cleanup.reap_dead(said.append) == 1
    assert control.read_text() == "on" and said == [f"set SMT back to on ({control}), left switched by process "
                                                    f"{child.pid}"]


def test_a_kernel_smt_axis_runs_one_mode_after_the_other(control, monkeypatch):
    monkeypatch.setattr(smt.os, "geteuid", lambda: 0)
    s = study.parse(HEAD + '[variants.a]\n[variants.b]\n[cpus]\nserver = [1, 2]\nsmt = ["off", "on"]\n', "c.toml")
    (engine_plan,) = plan.expand(s, lambda e: 4)
    assert placement.kernel_smt(s, [engine_plan])
    parts = plan.by_smt(engine_plan)
    assert [(mode, part.variants) for mode, part in parts] == [
        ("off", ("a_1core_smt-off", "a_2cores_smt-off", "b_1core_smt-off", "b_2cores_smt-off")),
        ("on", ("a_1core_smt-on", "a_2cores_smt-on", "b_1core_smt-on", "b_2cores_smt-on"))]
    # Every point once, each in its mode's part; variants still interleaved within it.
    assert sorted(map(repr, (p for _, part in parts for p in part.points))) == sorted(map(repr, engine_plan.points))
    assert all(p.variant.endswith(f"smt-{mode}") for mode, part in parts for p in part.points)
    # Emulated by affinity, nothing is switched and the plan is one part.
    emulated = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = ["off", "on"]\nsmt_emulate = true\n', "c.toml")
    assert not placement.kernel_smt(emulated, plan.expand(emulated, lambda e: 4))


def test_a_kernel_smt_axis_is_refused_before_anything_starts_where_it_cannot_switch(control):
    control.write_text("notsupported\n")
    s = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = [1, 2]\n', "c.toml")
    with pytest.raises(UsageError, match=r"^\[cpus\] smt: this machine cannot switch SMT .*smt_emulate = true"):
        placement.kernel_smt(s, plan.expand(s, lambda e: 4))


def test_after_the_switch_the_servers_cpus_are_the_online_threads_of_whole_cores(control, monkeypatch):
    # Two cores of two threads; with SMT off the kernel left 0 and 1 online.
    online = [topology.Cpu(cpu=0, core=0, socket=0), topology.Cpu(cpu=1, core=1, socket=0)]
    monkeypatch.setattr(topology, "read", lambda: online)
    monkeypatch.setattr(placement.os, "sched_getaffinity", lambda pid: {0, 1})
    s = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = ["off"]\n', "c.toml")
    where = placement.placements(s, plan.expand(s, lambda e: 2), kernel=True, switched=True)
    placed = where[("postgres", "1core_smt-off")]
    assert (placed.server, placed.loadgen) == ((0,), (1,))
    assert placed.facts()["smt_by"] == f"kernel ({control})"


def test_study_check_says_how_the_smt_modes_are_made_and_whether_this_machine_can(control):
    from dbarena.run import studycheck

    control.write_text("notsupported\n")
    s = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = ["off", "on"]\n', "c.toml")
    text = studycheck.render(studycheck.summarise(s, plan.expand(s, lambda e: 2)))
    assert "SMT modes off, on: the kernel's switch (root), one mode after the other" in text
    assert "not on this machine: this machine cannot switch SMT (the kernel says notsupported" in text
    emulated = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = ["off", "on"]\nsmt_emulate = true\n', "c.toml")
    text = studycheck.render(studycheck.summarise(emulated, plan.expand(emulated, lambda e: 2)))
    assert "SMT modes off, on: emulated by affinity" in text and "not on this machine" not in text


def test_a_study_begun_with_smt_off_gets_its_siblings_back_in_its_affinity(control, monkeypatch):
    # With SMT off, sched_getaffinity shows the primary threads only; the CPUs the
    # process may use are what /proc/self/status lists (offline ones included).
    control.write_text("off\n")
    monkeypatch.setattr(smt, "allowed_cpus", lambda: {0, 1, 2, 3})
    given: list[set[int]] = []
    monkeypatch.setattr(smt.os, "sched_setaffinity", lambda pid, cpus: given.append(set(cpus)))
    with smt_switch.Switch() as switch:
        switch.set("on")
    assert given == [{0, 1, 2, 3}, {0, 1, 2, 3}]  # after "on", and after "off" again
    assert smt.allowed_cpus() >= set(os.sched_getaffinity(0))


def test_a_restore_that_cannot_write_says_so_in_one_line_and_keeps_the_record(control, monkeypatch):
    switch = smt_switch.Switch()
    switch.set("off")

    def refuse(path, mode):
        raise smt.EnvironmentProblem(f"could not set SMT to {mode} through {path}: Device or resource busy")
    monkeypatch.setattr(smt, "write", refuse)
    problem = switch.restore()
    assert problem is not None and "\n" not in problem and f"`echo on > {control}`" in problem
    assert [d["kind"] for _, d in state.records()] == ["smt"]  # for `dbarena cleanup` to try again
    with pytest.raises(smt.EnvironmentProblem, match="Device or resource busy"):
        with switch:
            pass


def _record(tmp_path, control, **fields) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = state.start_time(child.pid)
    child.wait()
    folder = tmp_path / "state" / "records"
    folder.mkdir(parents=True, exist_ok=True)
    data = {"kind": "smt", "control": str(control), "original": "on", "owner_pid": child.pid,
            "owner_start": started or 0, **state.machine(), **fields}
    (folder / "smt-x.json").write_text(json.dumps(data))


def test_the_reaper_keeps_the_record_when_it_cannot_write_and_forgets_it_after_a_reboot(control, tmp_path,
                                                                                        monkeypatch):
    gone = tmp_path / "gone" / "control"
    monkeypatch.setattr(smt, "CONTROL", gone)  # (a kernel's switch that cannot be written now)
    _record(tmp_path, gone)
    said: list[str] = []
    cleanup.reap_dead(said.append)
    assert len(said) == 1 and said[0].startswith("could not set SMT back to on") and len(state.records()) == 1
    monkeypatch.setattr(smt, "CONTROL", control)
    control.write_text("off")
    _record(tmp_path, control, boot_id="another boot")  # replaces the first record
    (owner,) = [d["owner_pid"] for _, d in state.records()]
    said.clear()
    cleanup.reap_dead(said.append)
    assert said == [f"forgot that process {owner} had switched SMT: the machine has rebooted since"]
    assert control.read_text() == "off" and state.records() == []  # the boot decides now


def test_one_study_switches_at_a_time(control, tmp_path):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        folder = tmp_path / "state" / "records"
        folder.mkdir(parents=True)
        (folder / "smt-other.json").write_text(json.dumps({
            "kind": "smt", "control": str(control), "original": "on", "owner_pid": other.pid,
            "owner_start": state.start_time(other.pid), **state.machine()}))
        assert smt_switch.refusal(["off", "on"], root=True) == (
            f"another dbarena process (pid {other.pid}) has switched SMT and not yet put it back")
    finally:
        other.kill()
        other.wait()


def test_the_session_puts_smt_back_when_a_part_fails_and_shares_the_budget(control, monkeypatch, tmp_path):
    from dbarena.store.database import Store

    seen: list[tuple[str, float | None]] = []

    def fake_engine(ctx, part, *, first_index, later):
        seen.append((smt.read(), ctx.deadline))
        if len(seen) == 2:
            raise RuntimeError("the second mode's server would not start")
        return first_index + len(part.points)
    monkeypatch.setattr(session, "_run_engine", fake_engine)
    monkeypatch.setattr(preflight, "check_settings", lambda study, executor=None: None)
    s = study.parse(HEAD.replace("[sweep]\n", '[sweep]\nprecision = "5%"\nbudget = "1h"\n')
                    + '[cpus]\nserver = [1]\nsmt = ["off", "on"]\n', "c.toml")
    with Store(tmp_path / "r.db") as db, pytest.raises(RuntimeError, match="would not start"):
        session.run(s, store=db, host_facts={"hardware_threads": 2}, clock=lambda: 0.0)
    assert [mode for mode, _ in seen] == ["off", "on"]
    assert seen[0][1] == pytest.approx(1800)  # half the hour: the two modes' plans are alike
    assert control.read_text().strip() == "on" and state.records() == []


def test_cpus_an_administrator_had_offline_are_offline_again_after_the_study(tmp_path, monkeypatch):
    # A sysfs-like tree: cpu/smt/control, cpu/online, cpu/cpuN/online. CPU 3 was taken
    # offline by hand before the study; writing "on" at the end brought it online
    # (this stand-in kernel does that by the test's hand).
    cpu = tmp_path / "cpu"
    (cpu / "smt").mkdir(parents=True)
    control = cpu / "smt" / "control"
    control.write_text("on\n")
    (cpu / "online").write_text("0-2\n")
    for n in range(1, 4):
        (cpu / f"cpu{n}").mkdir()
        (cpu / f"cpu{n}" / "online").write_text("0\n" if n == 3 else "1\n")
    switch = smt_switch.Switch(control)
    switch.set("off")
    (record,) = [d for _, d in state.records() if d["kind"] == "smt"]
    assert record["online"] == "0-2"
    (cpu / "online").write_text("0-3\n")  # what "on" does to every present CPU
    switch.set("on")
    assert switch.restore() is None
    assert (cpu / "cpu3" / "online").read_text() == "0" and state.records() == []
    # The reaper does the same from a dead owner's record.
    (cpu / "online").write_text("0-3\n")
    (cpu / "cpu3" / "online").write_text("1\n")
    _record(tmp_path, control, online="0-2")
    monkeypatch.setattr(smt, "CONTROL", control)  # (this stand-in is the kernel's switch to the reaper)
    said: list[str] = []
    cleanup.reap_dead(said.append)
    assert said[0].startswith("set SMT back to on") and (cpu / "cpu3" / "online").read_text() == "0"
