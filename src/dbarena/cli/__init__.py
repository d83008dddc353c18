"""The command line: parse options, call the library, render, map errors to exit
statuses. A thin layer: every command calls library functions (study.arguments,
session, stats.analysis, report, fleet) and prints what they return.

app.py holds the root group and `main`; the commands live in running.py, results.py
and fleet.py, each registered on the group when its module is imported: on first use of
one of its commands (app.COMMAND_MODULES), or all at once by app.load_commands().
"""

from dbarena.cli.app import cli, load_commands, main

__all__ = ["cli", "load_commands", "main"]
