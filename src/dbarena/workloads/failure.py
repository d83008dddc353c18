"""Why a benchmark tool failed, in one line: the tool's own error line, wherever it
printed it (sysbench prints its FATAL lines on stdout, pgbench and mysqlslap their
errors on stderr), the most specific one when it printed several.

Pure: text in, a line out. tests/unit/test_failure_line.py reads the real outputs
under tests/fixtures/failures/ (tests/fixtures/capture-failures made them fail).
"""

from __future__ import annotations

import re
import signal

from dbarena.masking import masked

# A line longer than this is cut: sysbench's mysql_drv_query error quotes its whole
# query (a bulk INSERT of 8,000 characters), whose head says what went wrong.
MAX_LINE_CHARS = 300

# A server's own message, with its code or severity: the most specific line there is.
# PostgreSQL's `ERROR:  relation ... does not exist` (libpq's FATAL: for a refused
# login), sysbench's `MySQL error: 1146 "..."` and `returned error 1062 (Duplicate
# entry ...)`, its `errno = 1050`, mysqlslap's `ERROR : You have an error ...`,
# mysql's `ERROR 1045 (28000): ...`.
_SERVER = re.compile(r"\b(?:ERROR|FATAL|PANIC):  |\bERROR : |MySQL error: \d|\berror \d{3,5} \(|\berrno = \d|"
                     r"^ERROR \d{3,5} ")
# A tool's own error line: sysbench's `FATAL: `, pgbench's `pgbench: error:` (and
# `fatal:` before PostgreSQL 15), mysqlslap's `mysqlslap: ...` (its path first when run
# by path), a generic `Error: ...`.
_TOOL = re.compile(r"^(?:FATAL: |pgbench: (?:error|fatal): |(?:\S*/)?mysqlslap: |Error: |error: )")
# Said but not why the run failed: mysqlslap's password warning, and the error pgbench's
# vacuum ignores (the next line says so) before it runs anyway.
_NOT_A_FAILURE = re.compile(r"^(?:\S*/)?mysqlslap: \[(?:Warning|Note)\]")
_IGNORED = "(ignoring this error and continuing anyway)"
# Progress reports between the error lines: pgbench's and sysbench's interval lines.
_PROGRESS = re.compile(r"^(?:progress: |\[ *\d+(?:\.\d+)?s ?\] )")


def _candidates(text: str) -> list[tuple[int, str]]:
    """(specificity, line) of each error line of one stream, in the order printed:
    2 a server's message, 1 a tool's error line."""
    lines = [line.strip() for line in text.splitlines()]
    found = []
    for i, line in enumerate(lines):
        if not line or _NOT_A_FAILURE.match(line):
            continue
        if i + 1 < len(lines) and lines[i + 1] == _IGNORED:
            continue
        level = 2 if _SERVER.search(line) else 1 if _TOOL.match(line) else 0
        if level:
            found.append((level, line))
    return found


def _tidy(line: str) -> str:
    """The line as a user reads it: pgbench's prefix once (two threads' lines interleave
    as `pgbench: error: pgbench: error: client 1 ...`), mysqlslap without the directory it
    ran from, the tool's spacing (`ERROR:  relation`) as one space, a long line cut."""
    line = re.sub(r"^(pgbench: (?:error|fatal): )+", r"\1", line)
    line = re.sub(r"^\S*/(mysqlslap: )", r"\1", line)
    line = re.sub(r"\s+", " ", line)
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS - 3].rstrip() + "..."
    return masked(line)  # a connection string in an error: its password never shown


def error_line(stdout: str, stderr: str) -> str | None:
    """The tool's own line saying why it failed (None: it printed none): of the lines
    holding a server's message, else of the tool's error lines, the first printed (what
    follows is usually its consequence: `Thread initialization failed!`, `Run was
    aborted`), stderr before stdout."""
    found = _candidates(stderr) + _candidates(stdout)
    if not found:
        return None
    best = max(level for level, _ in found)
    return _tidy(next(line for level, line in found if level == best))


def _last_lines(text: str) -> str | None:
    """The last line of a stream that is not a progress report (a tool that printed no
    error line: what it said last)."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not _PROGRESS.match(line.strip())]
    return _tidy(lines[-1]) if lines else None


def exit_reason(returncode: int | None) -> str:
    """`exit status 1`, or the signal that killed the tool (sysbench's segmentation
    fault when its threads fail to start is -11: `killed by signal 11 (SIGSEGV)`), or
    (None) that it outlasted its time and was killed (execute.Completed)."""
    if returncode is None:
        return "killed after its time ran out"
    if returncode < 0:
        try:
            name = f" ({signal.Signals(-returncode).name})"
        except ValueError:
            name = ""
        return f"killed by signal {-returncode}{name}"
    return f"exit status {returncode}"


def failure_reason(returncode: int | None, stdout: str, stderr: str) -> str:
    """Why a tool that exited with `returncode` failed, in one line: how it ended and
    its own error line (else the last line it printed on stderr, else on stdout)."""
    said = error_line(stdout, stderr) or _last_lines(stderr) or _last_lines(stdout) or "no output"
    return f"{exit_reason(returncode)}: {said}"
