"""Engine facts are spelled in engines/ only (docs/architecture.md): the variables a
password is read from, a server's binaries, the URL of a server made elsewhere and the
files its clients read a password from. Elsewhere they are asked of the Engine
(interfaces.Engine), so that an engine added is one module, not a hunt through cloud/,
fleet/ and cli/."""

from __future__ import annotations

import ast
from pathlib import Path

import dbarena

SRC = Path(dbarena.__file__).parent
# What only engines/ spells: the password variables (a docstring may name them), and
# the modules that find a server's binaries.
VARIABLES = {"PGPASSWORD", "MYSQL_PWD"}
BINARIES = {"dbarena.engines.postgres_binaries", "dbarena.engines.mysql_binaries"}
# The team store is a PostgreSQL database too, reached by its own URL and libpq's
# variables (store/): not an engine under test. masking.py names every secret's form.
OUTSIDE_ENGINES = {"masking.py"}


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(), str(path))) for path in sorted(SRC.rglob("*.py"))
            if path.relative_to(SRC).parts[0] != "engines" and path.name not in OUTSIDE_ENGINES]


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_password_variables_are_the_engines_own():
    spelled = []
    for path, tree in _modules():
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and node.value in VARIABLES:
                spelled.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.value!r} (use engines.PASSWORD_VARIABLES "
                               "or an engine's password_env)")
    assert not spelled, "\n".join(spelled)


def test_server_binaries_are_found_by_the_engine():
    reached = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            reached += [f"{path.relative_to(SRC)}:{node.lineno}: {n} (ask the Engine: version_here, available)"
                        for n in names if n in BINARIES]
    assert not reached, "\n".join(reached)


def test_engine_urls_and_password_files_come_from_the_engine():
    from dbarena import engines

    pg, my = engines.first("postgres"), engines.first("mysql")
    assert pg.target_url("db.example", 5432, "u") == "postgresql://u@db.example:5432/postgres"
    assert my.target_url("db.example", 3306, "u") == "mysql://u@db.example:3306/mysql"
    assert engines.engine_of_url(pg.target_url("h", 1, "u")) == "postgres"
    assert engines.engine_of_url(my.target_url("h", 1, "u")) == "mysql"
    # libpq's password file: ":" and "\" escaped; the MySQL family's option file: quoted.
    assert pg.password_file("h", 5432, "u", r'a:b\c"d') == ("pgpass", "h:5432:*:u:a\\:b\\\\c\"d\n")
    suffix, text = my.password_file("h", 3306, "u", r'a:b\c"d')
    assert suffix == "my.cnf" and 'password="a:b\\\\c\\"d"' in text and text.startswith("[client]\n")
    assert set(engines.PASSWORD_VARIABLES) == VARIABLES
