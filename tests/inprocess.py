"""A dbarena command run in this process as `python -m dbarena` would run it in its own:
the same argv through dbarena.cli.main, with the environment, working directory and
stdin the process would have had, and a CompletedProcess back (exit status, stdout,
stderr, and a traceback in stderr with status 1 where Python would have printed one).

For the tests whose subject is what a command does, not how a process starts or ends: a
process costs about a second of CPU, most of it importing dbarena, which this process
has done once. The tests of exit statuses on signals, of a Ctrl-C while the modules
load, of a process killed mid-write keep their real processes.

What outlives a command here, as it would not a process: the watchdog of dbarena's state
records (lifecycle/state.py _Watchdog: `verify`, `import` of a bundle, `site` record
their throwaway stores), started by the first such command with that command's
environment (its DBARENA_STATE_DIR) and kept for the rest of this process, which owns
the records; it is not closed after each command, as an exiting dbarena closes its own,
because on closing it reaps every record of its owner, and this process may own others
(a test's server started through dbarena's library). It reaps only if this process is
killed; a command's records are removed by the command itself."""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Iterator, Mapping


@contextlib.contextmanager
def _as_a_process(env: Mapping[str, str] | None, cwd: Path | str | None, stdin: str) -> Iterator[None]:
    """os.environ, the working directory, stdin, the temporary directory and the SIGTERM
    handler as a new process would have them; this process's own back afterwards, with
    what dbarena's main sets for the rest of its process (cli/app.py): its
    sys.unraisablehook (left, it would replace pytest's, which reports an exception in a
    finalizer, for the rest of the worker) and a handler on psycopg's logger (one more
    each command). A freeze of what a large read keeps (bulk.keep: gc.freeze) is undone
    too: this process goes on, and the frozen objects would never be collected."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_tempdir, saved_stdin = tempfile.tempdir, sys.stdin
    saved_sigterm = signal.getsignal(signal.SIGTERM)
    saved_unraisable = sys.unraisablehook
    psycopg_log = logging.getLogger("psycopg")
    saved_handlers = list(psycopg_log.handlers)
    frozen = gc.get_freeze_count()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        # tempfile keeps the TMPDIR it first read: a test's private TMPDIR would be ignored.
        tempfile.tempdir = None
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin = io.StringIO(stdin)
        yield
    finally:
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
        tempfile.tempdir = saved_tempdir
        os.environ.clear()
        os.environ.update(saved_env)
        signal.signal(signal.SIGTERM, saved_sigterm)
        sys.unraisablehook = saved_unraisable
        psycopg_log.handlers[:] = saved_handlers
        if not frozen and gc.get_freeze_count():
            gc.unfreeze()


def dbarena(*args: str, env: Mapping[str, str] | None = None, cwd: Path | str | None = None,
            stdin: str = "", timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m dbarena ARGS`, run in process (timeout: taken for the subprocess
    helper's signature; nothing here can be stopped halfway)."""
    from dbarena.cli import main

    argv = list(args)
    out, err = io.StringIO(), io.StringIO()
    with _as_a_process(env, cwd, stdin), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
            code = 0
        except SystemExit as ended:
            if ended.code is None or isinstance(ended.code, int):
                code = ended.code or 0
            else:  # sys.exit("message"): Python prints it, exit status 1
                print(ended.code, file=sys.stderr)
                code = 1
        except Exception:  # what Python would print before ending with status 1
            traceback.print_exc(file=sys.stderr)
            code = 1
    return subprocess.CompletedProcess([sys.executable, "-m", "dbarena", *argv], code, out.getvalue(),
                                       err.getvalue())
