"""The command line: parse options, call the library, render, map errors to exit
statuses. A thin layer: every command calls library functions (study.arguments,
session, stats.analysis, report, fleet) and prints what they return.

app.py holds the root group and `main`; the commands live in running.py, results.py,
history.py, bisect.py, probe.py, serve.py, exchange.py and fleet.py, each registered on the group when its module is imported: on first use of
one of its commands (app.COMMAND_MODULES), or all at once by app.load_commands().
"""

from dbarena.errors import ExitStatus
from dbarena import shield

# A Ctrl-C while the command line's modules load (half a second on a busy machine, before
# `main` can say anything) is held until they are, then ends the command as interrupted:
# raised in the middle of an import, it was the traceback of that import, or another
# error altogether (numpy turns it into "RuntimeError: Unable to configure default
# ndarray.__str__"). app.py holds it so while a command's own module loads.
try:
    with shield.shielded():
        from dbarena.cli.app import cli, load_commands, main
except KeyboardInterrupt:
    raise SystemExit(ExitStatus.INTERRUPTED) from None

__all__ = ["cli", "load_commands", "main"]
