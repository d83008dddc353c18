"""What a host said when an Ansible task failed on it, made short enough for one
status line and a few lines under it.

Ansible's own message for a failed task is often generic ("Module result
deserialization failed: No start of json char found", "MODULE FAILURE", "non-zero
return code"); the cause is in the host's own output (`module_stderr`, `stderr`,
`module_stdout`, `stdout`), e.g. `pyenv: python3.13: command not found` from a Python
shim that cannot run Ansible's module. So a failure is one summary line (the task,
Ansible's message, the exit status) and the last lines the host printed. Passwords are
masked in both: the host's output can echo a command line or an environment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

# The project's one masking of passwords, through its public name (importers.reading's __all__).
from dbarena.importers.reading import masked

MAX_LINES = 10   # of the host's output under the summary line
MAX_WIDTH = 200  # characters of one output line

# What ssh adds to a task's output on every connection: it says nothing about the failure.
_NOISE = (
    re.compile(r"Warning: Permanently added .*? to the list of known hosts\.?"),
    re.compile(r"^Shared connection to \S+ closed\.$"),
    re.compile(r"^mux_client_\w+: .*$"),
)
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")
# Exit statuses of a shell that could not start the program: the host's Python did
# not run at all, so no module did (a pyenv shim without that version, a wrong path).
_NOT_STARTED = {126: "cannot be executed", 127: "command not found"}


@dataclass(frozen=True)
class Failure:
    summary: str              # one line: the task, Ansible's message, the exit status
    output: tuple[str, ...]   # the last lines the host printed (stderr, stdout before it)
    brief: str = ""           # for a table's cell: the task and the host's first line of output

    @property
    def short(self) -> str:
        return self.brief or self.summary


def hide(text: str, secrets: Iterable[str] = ()) -> str:
    """The text with passwords masked: those it spells out (`--password=`, `PGPASSWORD=`,
    `://user:pw@`) and the given secret values wherever they appear."""
    for secret in secrets:
        if len(secret) >= 4:  # shorter ones would mask ordinary words
            text = text.replace(secret, "***")
    return masked(text)


def lines_of(text: object, secrets: Iterable[str] = ()) -> list[str]:
    """The meaningful lines of a task's output: without ssh's noise, control characters,
    blank lines and trailing spaces; each at most MAX_WIDTH characters, passwords masked."""
    if not text:
        return []
    secrets = list(secrets)
    out = []
    for raw in str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = _CONTROL.sub("", raw)
        for noise in _NOISE:
            line = noise.sub("", line)
        line = hide(line, secrets).rstrip()
        if line.strip():
            out.append(line if len(line) <= MAX_WIDTH else line[:MAX_WIDTH - 3] + "...")
    return out


def output_tail(result: Mapping[str, object], secrets: Iterable[str] = (), limit: int = MAX_LINES) -> list[str]:
    """The last lines (at most `limit`) the host printed for a task: its stderr, and
    when that leaves room, the end of its stdout before it (a program usually prints its
    error last, on stderr)."""
    secrets = list(secrets)
    err = [line for key in ("module_stderr", "stderr") for line in lines_of(result.get(key), secrets)]
    out = [line for key in ("module_stdout", "stdout") for line in lines_of(result.get(key), secrets)]
    err = err[-limit:]
    room = limit - len(err)
    return (out[-room:] if room and out else []) + err


def failure(task: str | None, result: Mapping[str, object], secrets: Iterable[str] = (),
            limit: int = MAX_LINES) -> Failure:
    """A failed or unreachable task's result, as one summary line and the host's output."""
    secrets = list(secrets)
    where = f'task "{task}": ' if task else ""
    if result.get("censored"):  # a no_log task: Ansible hid its result before dbarena saw it
        return Failure(f"{where}failed (its output is hidden: the task is no_log)", ())
    message = lines_of(result.get("msg"), secrets)
    output = output_tail(result, secrets, limit)
    summary = message[0] if message else ("failed" if output else "failed, and the host printed nothing")
    if not output and len(message) > 1:  # a message of several lines (ssh's, a module's) is the output
        output = message[1:][-limit:]
    rc = result.get("rc")
    if isinstance(rc, int) and rc != 0:
        summary += f" (exit status {rc}"
        if rc in _NOT_STARTED and ("module_stderr" in result or "module_stdout" in result):
            summary += f", {_NOT_STARTED[rc]}: the host's Python did not start; set ansible_python_interpreter " \
                       "for this host, see docs/fleet.md"
        summary += ")"
    if output and summary.endswith(output[-1]):
        output = output[:-1]  # said already
    return Failure(where + summary, tuple(output), brief=where + output[0].strip() if output else "")
