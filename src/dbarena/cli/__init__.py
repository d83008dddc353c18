"""The command line: parse options, call the library, render, map errors to exit
statuses. A thin layer: every command calls library functions (study.arguments,
session, stats.analysis, report, fleet) and prints what they return.

app.py holds the root group and `main`; the commands live in running.py, results.py
and fleet.py, each registered on the group when imported here.
"""

from dbarena.cli import fleet, results, running  # noqa: F401  # registers the commands
from dbarena.cli.app import cli, main

__all__ = ["cli", "main"]
