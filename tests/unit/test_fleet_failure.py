"""What `dbarena fleet` shows when a task fails on a host: the task, Ansible's message,
and the host's own last lines of output; ssh's noise and passwords left out. The
results are as Ansible's json callback recorded them (ansible-core 2.19)."""

from __future__ import annotations

from dbarena.fleet import controller, failure
from dbarena.fleet.inventory import Host

# A host whose ansible_python_interpreter is a pyenv shim without that version (the
# status task is failed_when: false, the start task is not).
BROKEN_PYTHON = {
    "msg": "Module result deserialization failed: No start of json char found", "module_stdout": "",
    "module_stderr": "Warning: Permanently added '[127.0.0.2]:56431' (ED25519) to the list of known hosts.\r\n"
                     "pyenv: python3.13: command not found\n\n"
                     "The `python3.13' command exists in these Python versions:\n  3.13.1\n",
    "rc": 127, "changed": False, "exception": "(traceback unavailable)", "_ansible_no_log": False, "failed": True,
}
APT_FAILED = {
    "changed": True, "stdout": "", "stderr": "E: Unable to locate package sysbench", "rc": 100,
    "cmd": "missing=\"\"\nfor p in sysbench; do ...", "start": "2025-01-01 10:00:00.000000",
    "end": "2025-01-01 10:00:01.000000", "delta": "0:00:01.000000", "msg": "non-zero return code",
    "stdout_lines": [], "stderr_lines": ["E: Unable to locate package sysbench"], "failed": True,
}
UNREACHABLE = {
    "unreachable": True, "changed": False,
    "msg": "Failed to connect to the host via ssh: ssh: connect to host 127.0.0.3 port 40022: Connection refused",
}
CENSORED = {"censored": "the output has been hidden due to the fact that 'no_log: true' was specified for this "
                        "result", "changed": False, "failed": True}


def test_a_python_that_does_not_start_shows_the_hosts_own_error_and_a_hint():
    found = failure.failure("Debian packages the study needs", BROKEN_PYTHON)
    assert found.summary.startswith('task "Debian packages the study needs": Module result deserialization failed')
    assert "exit status 127, command not found" in found.summary and "ansible_python_interpreter" in found.summary
    assert found.short == 'task "Debian packages the study needs": pyenv: python3.13: command not found'
    assert found.output == ("pyenv: python3.13: command not found",
                            "The `python3.13' command exists in these Python versions:", "  3.13.1")
    assert "\n" not in found.summary


def test_a_command_that_fails_shows_its_stderr_and_exit_status():
    found = failure.failure("Debian packages the study needs", APT_FAILED)
    assert found.summary == 'task "Debian packages the study needs": non-zero return code (exit status 100)'
    assert found.output == ("E: Unable to locate package sysbench",)


def test_unreachable_is_ssh_s_message_in_one_line():
    found = failure.failure(None, UNREACHABLE)
    assert found.summary == UNREACHABLE["msg"] and found.output == ()
    several = {**UNREACHABLE, "msg": "Failed to connect to the host via ssh: Warning: Permanently added "
                                     "'[127.0.0.3]:40022' (ED25519) to the list of known hosts.\r\n"
                                     "root@127.0.0.3: Permission denied (publickey)."}
    found = failure.failure(None, several)
    assert found.summary == "Failed to connect to the host via ssh:"
    assert found.output == ("root@127.0.0.3: Permission denied (publickey).",)


def test_a_no_log_task_says_its_output_is_hidden():
    found = failure.failure("The passwords the run needs", CENSORED)
    assert found == failure.Failure('task "The passwords the run needs": failed (its output is hidden: '
                                    "the task is no_log)", ())


def test_only_the_last_ten_lines_stderr_first_and_stdout_fills_the_rest():
    long = {"failed": True, "rc": 1, "msg": "non-zero return code",
            "stdout": "\n".join(f"out {i}" for i in range(30)), "stderr": "\n".join(f"err {i}" for i in range(4))}
    found = failure.failure("pip", long)
    assert found.output == tuple([f"out {i}" for i in range(24, 30)] + [f"err {i}" for i in range(4)])
    flood = {**long, "stderr": "\n".join(f"err {i}" for i in range(40))}
    assert failure.failure("pip", flood).output == tuple(f"err {i}" for i in range(30, 40))
    wide = {**long, "stdout": "", "stderr": "x" * 5000 + "\x1b[31m\x07 red   \n\n   \n"}
    lines = failure.failure("pip", wide).output
    # One line (blank ones dropped), its colour codes gone, cut to MAX_WIDTH characters.
    assert lines == ("x" * (failure.MAX_WIDTH - 3) + "...",)


def test_passwords_in_a_hosts_output_are_masked():
    echoed = {"failed": True, "rc": 2, "msg": "non-zero return code",
              "stderr": "connecting with PGPASSWORD=hunter2hunter2 to postgresql://bench:s3cret@db/x\n"
                        "the password is fleet-abcdef0123 indeed\n--password=topsecret"}
    text = "\n".join([*(found := failure.failure("run", echoed, secrets=["fleet-abcdef0123"])).output,
                      found.summary])
    for secret in ("hunter2hunter2", "s3cret", "fleet-abcdef0123", "topsecret"):
        assert secret not in text
    assert "PGPASSWORD=***" in text and "the password is *** indeed" in text


def _state(status: dict, **kw) -> controller.HostState:
    host = Host(name="alpha", label="arm", price_per_hour=None, price_per_month=None, currency=None,
                workdir="/var/tmp/dbarena-fleet/alpha")
    return controller.HostState(host=host, status=status, **kw)


def test_a_host_line_and_its_block():
    state = _state({"state": "failed"})
    found = failure.failure("Debian packages the study needs", BROKEN_PYTHON)
    state.set_problem("start failed: " + found.summary, found.output)
    block = state.block()
    assert block.splitlines()[0].startswith('alpha (arm): failed; start failed: task "Debian packages')
    assert "    | pyenv: python3.13: command not found" in block.splitlines()
    assert state.in_trouble


def test_complete_already_is_said_once_with_its_count_and_not_by_status():
    state = _state({"state": "complete", "skipped": True, "planned": 12, "done": 12, "failed": 0})
    assert state.line() == "alpha (arm): complete already (12/12 points stored), not run again"
    assert state.line(this_run=False) == "alpha (arm): complete; 12/12 points"
    assert not state.in_trouble


def test_no_eta_before_a_plan_an_estimate_before_a_point_ended_then_a_measured_one():
    assert _state({"state": "running", "eta_s": None, "eta_basis": "unknown", "stage": "starting"}).line() == \
        "alpha (arm): running; starting; ETA not known yet"
    early = _state({"state": "running", "planned": 4, "done": 0, "eta_s": 720, "eta_basis": "estimate",
                    "current": "postgres pgbench-select-only threads=1 repeat 1"}).line()
    assert early.endswith("ETA about 12m00s (the study's estimate; no point has ended yet)") and "0m00s" not in early
    later = _state({"state": "running", "planned": 4, "done": 1, "eta_s": 500, "eta_basis": "measured"}).line()
    assert later.endswith("1/4 points; ETA 8m20s")
    # A host with an older dbarena: eta_s 0 and nothing done is no ETA.
    assert _state({"state": "running", "planned": 4, "done": 0, "eta_s": 0}).line().endswith("ETA not known yet")


def test_which_hosts_fleet_status_exits_1_for():
    assert _state({"state": "running"}).in_trouble is False
    assert _state({"state": "idle", "error": "dbarena is not installed there yet"}).in_trouble is False
    assert _state({"state": "stopped", "done": 1, "planned": 3}).in_trouble
    assert _state({"state": "running"}, unreachable_since=1.0).in_trouble


def test_a_host_named_as_its_label_is_named_once_and_quicks_note_is_not_its_state():
    from dataclasses import replace

    state = _state({"state": "running", "stage": "--quick: 5 s points, too short for steady-state figures",
                    "eta_s": None, "eta_basis": "unknown"})
    state = controller.HostState(host=replace(state.host, label="alpha"), status=state.status)
    assert state.line() == "alpha: running; ETA not known yet"
