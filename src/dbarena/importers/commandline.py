"""Echoed command lines: a tool's arguments, and the value of one of its options."""

from __future__ import annotations

import functools
import re
import shlex

# What may come before the tool's name: a shell prompt, sudo, time, environment
# assignments (`PGPASSWORD="x" pgbench ...`, `env MYSQL_PWD=x mysqlslap ...`: not part
# of the tool's arguments, and masked where the line is kept), a directory.
_ASSIGNMENT = r"""[A-Za-z_]\w*=(?:'[^']*'|"(?:[^"\\]|\\.)*"|[^\s'"])*\s+"""
_PROMPT = (r"^(?:.*?[$#>]\s+|\+\s+)?(?:sudo\s+(?:-u\s*\S+\s+)?)?(?:env\s+)?(?:" + _ASSIGNMENT + r")*"
           r"(?:time\s+)?(?:[\w./~-]*/)?")


@functools.lru_cache(maxsize=None)
def _command_line(tool: str) -> re.Pattern[str]:
    """The pattern of a `tool ...` command line, compiled once per tool (it is tried on
    every line of an imported file)."""
    return re.compile(_PROMPT + re.escape(tool) + r"(?:\s+(?P<args>.*))?$")


def command(line: str, tool: str) -> list[str] | None:
    """The arguments of an echoed `tool ...` command line, or None."""
    if tool not in line:
        return None  # most lines: no pattern to try
    m = _command_line(tool).match(line.strip())
    if m is None or line.lstrip().startswith((f"{tool}:", f"{tool} (")):
        return None
    args = m["args"] or ""
    if tool == "sysbench" and re.match(r"\d", args):  # the banner "sysbench 1.0.20 (...)"
        return None
    try:
        return shlex.split(args, comments=False)
    except ValueError:
        return args.split()


def option(args: list[str], *names: str) -> str | None:
    """Value of -x V, -xV, --name=V or --name V (last one wins)."""
    value = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                value = args[i + 1]
            elif name.startswith("--") and arg.startswith(name + "="):
                value = arg.split("=", 1)[1]
            elif not name.startswith("--") and arg.startswith(name) and len(arg) > len(name):
                value = arg[len(name):]
    return value
