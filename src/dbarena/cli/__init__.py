"""The command line: parse options, call the library, render, map errors to exit
statuses. A thin layer: every command calls library functions (study.arguments,
session, stats.analysis, report, fleet) and prints what they return.

app.py holds the root group and `main`; the commands live in running.py, results.py
and fleet.py, each registered on the group when its module is imported: on first use of
one of its commands (app.COMMAND_MODULES), or all at once by app.load_commands().
"""

import signal
import threading
from types import FrameType

from dbarena.errors import ExitStatus


def _interrupted_while_loading(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(ExitStatus.INTERRUPTED)


# A Ctrl-C while the command line's modules load (half a second on a busy machine, before
# `main` can say anything) ends it as an interrupted command, not with the traceback of an
# import. Only where Ctrl-C would have raised KeyboardInterrupt (not where it is ignored,
# as in a script's background job), and put back once loaded.
_loading = threading.current_thread() is threading.main_thread() \
    and signal.getsignal(signal.SIGINT) is signal.default_int_handler
if _loading:
    signal.signal(signal.SIGINT, _interrupted_while_loading)
try:
    from dbarena.cli.app import cli, load_commands, main
finally:
    if _loading:
        signal.signal(signal.SIGINT, signal.default_int_handler)

__all__ = ["cli", "load_commands", "main"]
