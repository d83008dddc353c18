"""The kernel's SMT switch (smt.py) and the session's use of it: refusals before
anything starts, one mode's variants after the other, and the original state back at
the end, on Ctrl-C and after a SIGKILL.

This machine's kernel cannot switch (a VM: `notsupported`), so the switch is a file
standing in for /sys/devices/system/cpu/smt/control: these tests check what dbarena
writes there and when, not what a kernel does with it. The real file's refusal is
checked against this machine in tests/e2e/test_study_run.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from dbarena import plan, session, smt, state, study, topology
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
    assert fragment in (smt.refusal(["off", "on"], root=True) or "")


def test_refusals_without_the_file_without_root_and_for_thread_counts_on_x86(control, tmp_path):
    assert "is missing" in (smt.refusal(["off"], tmp_path / "nothing", root=True) or "")
    assert "needs root" in (smt.refusal(["off"], root=False) or "")
    assert "this x86_64 kernel switches SMT on and off only" in (
        smt.refusal(["1", "2"], machine="x86_64", root=True) or "")
    assert smt.refusal(["1", "2", "4", "8"], machine="ppc64le", root=True) is None
    assert smt.refusal(["off", "on"], machine="x86_64", root=True) is None


def test_the_switch_sets_each_mode_and_puts_the_original_back(control):
    with smt.Switch() as switch:
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
        with smt.Switch() as switch:
            switch.set("on")
            raise KeyboardInterrupt
    assert control.read_text() == "off" and state.records() == []


def test_a_killed_owners_switch_is_put_back_by_its_watchdog(control, tmp_path):
    code = ("import time; from dbarena import smt; from pathlib import Path; "
            f"s = smt.Switch(Path({str(control)!r})); s.set('off'); print('ready', flush=True); time.sleep(60)")
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, state.ENV: str(tmp_path / "state")})
    assert owner.stdout is not None and owner.stdout.readline() == "ready\n"
    assert control.read_text() == "off"
    owner.kill()
    owner.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and control.read_text() != "on":
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
    assert state.reap_dead(said.append) == 1
    assert control.read_text() == "on" and said == [f"set SMT back to on ({control}), left switched by process "
                                                    f"{child.pid}"]


def test_a_kernel_smt_axis_runs_one_mode_after_the_other(control, monkeypatch):
    monkeypatch.setattr(smt.os, "geteuid", lambda: 0)
    s = study.parse(HEAD + '[variants.a]\n[variants.b]\n[cpus]\nserver = [1, 2]\nsmt = ["off", "on"]\n', "c.toml")
    (engine_plan,) = plan.expand(s, lambda e: 4)
    assert session.kernel_smt(s, [engine_plan])
    parts = plan.by_smt(engine_plan)
    assert [(mode, part.variants) for mode, part in parts] == [
        ("off", ("a_1core_smt-off", "a_2cores_smt-off", "b_1core_smt-off", "b_2cores_smt-off")),
        ("on", ("a_1core_smt-on", "a_2cores_smt-on", "b_1core_smt-on", "b_2cores_smt-on"))]
    # Every point once, each in its mode's part; variants still interleaved within it.
    assert sorted(map(repr, (p for _, part in parts for p in part.points))) == sorted(map(repr, engine_plan.points))
    assert all(p.variant.endswith(f"smt-{mode}") for mode, part in parts for p in part.points)
    # Emulated by affinity, nothing is switched and the plan is one part.
    emulated = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = ["off", "on"]\nsmt_emulate = true\n', "c.toml")
    assert not session.kernel_smt(emulated, plan.expand(emulated, lambda e: 4))


def test_a_kernel_smt_axis_is_refused_before_anything_starts_where_it_cannot_switch(control):
    control.write_text("notsupported\n")
    s = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = [1, 2]\n', "c.toml")
    with pytest.raises(UsageError, match=r"^\[cpus\] smt: this machine cannot switch SMT .*smt_emulate = true"):
        session.kernel_smt(s, plan.expand(s, lambda e: 4))


def test_after_the_switch_the_servers_cpus_are_the_online_threads_of_whole_cores(control, monkeypatch):
    # Two cores of two threads; with SMT off the kernel left 0 and 1 online.
    online = [topology.Cpu(cpu=0, core=0, socket=0), topology.Cpu(cpu=1, core=1, socket=0)]
    monkeypatch.setattr(topology, "read", lambda: online)
    monkeypatch.setattr(session.os, "sched_getaffinity", lambda pid: {0, 1})
    s = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = ["off"]\n', "c.toml")
    where = session.placements(s, plan.expand(s, lambda e: 2), kernel=True, switched=True)
    placed = where[("postgres", "1core_smt-off")]
    assert (placed.server, placed.loadgen) == ((0,), (1,))
    assert placed.facts()["smt_by"] == f"kernel ({control})"


def test_study_check_says_how_the_smt_modes_are_made_and_whether_this_machine_can(control):
    from dbarena import studycheck

    control.write_text("notsupported\n")
    s = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = ["off", "on"]\n', "c.toml")
    text = studycheck.render(studycheck.summarise(s, plan.expand(s, lambda e: 2)))
    assert "SMT modes off, on: the kernel's switch (root), one mode after the other" in text
    assert "not on this machine: this machine cannot switch SMT (the kernel says notsupported" in text
    emulated = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = ["off", "on"]\nsmt_emulate = true\n', "c.toml")
    text = studycheck.render(studycheck.summarise(emulated, plan.expand(emulated, lambda e: 2)))
    assert "SMT modes off, on: emulated by affinity" in text and "not on this machine" not in text
