"""Passwords spelled out in text that dbarena keeps or shows, replaced by ***.

One place for every form a shell, libpq or a MySQL client accepts, so that an imported
output, a stored command and an error message are masked alike:

- environment variables and options, `=` then a shell word, bare or quoted:
  `PGPASSWORD=x`, `PGPASSWORD="x y"`, `MYSQL_PWD='x'`, `--password=x`,
  `--pgsql-password=x`, `--mysql-password="x"`;
- a long option and its value as the next word: `--password x`, `--password 'x y'`;
- libpq keyword connection strings: `host=h password=x dbname=d`, `password='x y'`,
  `password = x` (libpq allows spaces around `=`, as option files do: my.cnf's
  `password = x`);
- configuration echoed into a file: `password: x` (YAML), `"password": "x"` (JSON);
- URLs: `postgresql://user:x@host/db`, `mysql://user:x@host`;
- a MySQL client's glued short option, on a line that runs one: `mysqlslap -px`,
  `-p'x'`, `-p"x"` (`-p x` is not a password there: a bare -p prompts for one, and
  pgbench's `-p 5432` is a port, so `-p x` is left as it is).

A key is a whole word, never the last part of a path: `/etc/passwd: cannot read it` is
an error about a file, shown whole (`password: x` after a path's `/` is a file's name).

Masking is done on what is kept, after the figures are read: it may hide a little
more than the password (a word after `--password` that a MySQL client would have taken
as a database name) but never less.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"

# A quoted string: libpq's and the shell's '...' (a backslash escapes in libpq; the
# shell's form is tried next, for a value ending in a backslash), or "..." (backslash
# escapes), or a quote never closed (the rest of the line, as the shell reads on).
_QUOTED = r"""'(?:[^'\\\n]|\\.)*'|'[^'\n]*'|"(?:[^"\\\n]|\\.)*"|['"][^\n]*"""
# A value: quoted, or bare and then maybe glued to quoted parts (PGPASSWORD=ab"c d").
# A quoted part glued to a bare one counts only when it ends the word: in
# `psql "host=h password=x" -c "select 1"` the `"` after x closes the outer string.
_VALUE = rf"""(?:{_QUOTED}|[^\s'"]+(?:(?:'[^'\n]*'|"(?:[^"\\\n]|\\.)*")(?=\s|$)|[^\s'"]+)*)"""
# The name of a setting holding a password: PGPASSWORD, MYSQL_PWD, password (libpq),
# --password, --pgsql-password, db_passwd ... A whole word, and not a file's name in a
# path: `/etc/passwd: cannot read it` is a file and its error, which masking made
# `/etc/passwd: *** read it` (a message garbled, nothing secret hidden).
_KEY = r"(?i:(?<![\w/\\-])[\w-]*(?:password|passwd|_pwd))"

# (The user part may hold a bare @, as urlsplit reads it: the password is what stands
# between the first ':' and the last '@' before the path.)
_URL = re.compile(r"(://[^/\s:]*:)[^\s/]*@")
# `=` right after the key, or with spaces or tabs before it and maybe after (libpq's
# `password = x`), or `:` with or without them (never a line break: `Password:` as a
# prompt ends its line), after a key maybe closing its quotes (JSON's "password": "x").
# Not `KEY= word`: in a shell that is an empty value and then the command's next word
# (`--pgsql-password= run`, `PGPASSWORD= pgbench`).
_ASSIGNED = re.compile(rf"""({_KEY}["']?(?:=|[ \t]+=[ \t]*|[ \t]*:[ \t]*)){_VALUE}""")
_SEPARATE = re.compile(rf"((?<![\w-])--(?:[\w-]+-)?password[ \t]+)(?!-){_VALUE}")
# A MySQL client (mysqlslap, mariadb-slap, mysql, mysqladmin ...) named on the line.
_MYSQL_CLIENT = re.compile(r"(?:^|[\s/;|&(])(?:mysql|mariadb)[\w-]*(?=\s)")
_GLUED_P = re.compile(rf"(?<=\s)-p(?=\S){_VALUE}")

_KEY_AT_START = re.compile(rf"^(?:--)?{_KEY}=(?=.)", re.S)
_MYSQL_PROGRAM = re.compile(r"^(?:.*/)?(?:mysql|mariadb)[\w-]*$")


# What every form above needs somewhere in the text: without any, there is nothing to
# mask (an imported output of 1 000 runs has none; the regular expressions would still
# read it all, four times).
_HINTS = ("://", "passw", "_pwd", "mysql", "mariadb")


def masked(text: str) -> str:
    """The text with every password it spells out replaced by ***."""
    lower = text.lower()
    if not any(hint in lower for hint in _HINTS):
        return text
    text = _URL.sub(rf"\1{MASK}@", text)
    text = _ASSIGNED.sub(rf"\1{MASK}", text)
    text = _SEPARATE.sub(rf"\1{MASK}", text)
    if _MYSQL_CLIENT.search(text):
        text = "\n".join(_GLUED_P.sub("-p" + MASK, line) if _MYSQL_CLIENT.search(line) else line
                         for line in text.split("\n"))
    return text


def masked_args(program: str, args: Iterable[str]) -> list[str]:
    """A command's arguments (split as the shell did: quotes gone, so a value may hold
    spaces) with every password masked; `program` says whether -pX is one (MySQL
    clients) or not (pgbench's -p is the port)."""
    out: list[str] = []
    after_password = False
    for arg in args:
        if after_password and not arg.startswith("-"):
            out.append(MASK)
        elif (m := _KEY_AT_START.match(arg)) is not None:
            out.append(arg[:m.end()] + MASK)  # the whole rest: the shell removed its quotes
        elif _MYSQL_PROGRAM.match(program) and arg.startswith("-p") and len(arg) > 2:
            out.append("-p" + MASK)
        else:
            out.append(masked(arg))
        after_password = re.fullmatch(r"--(?:[\w-]+-)?password", arg) is not None
    return out
