"""The layers docs/architecture.md describes, checked on the tree: every import of a
dbarena module (at the top, inside a function, under TYPE_CHECKING) stays inside its
layer or points down, the packages of one layer import nothing of each other, and no
two modules import each other round a cycle."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import dbarena

SRC = Path(dbarena.__file__).parent

# Top to bottom, as the table of docs/architecture.md gives them. A package is named by
# its directory, a root module by its name.
LAYERS: list[tuple[str, set[str]]] = [
    ("python -m dbarena", {"__main__"}),
    ("front ends", {"cli"}),
    ("the web front end", {"serve"}),
    ("machines on demand", {"cloud"}),
    ("many hosts", {"fleet"}),
    ("the run", {"run"}),
    ("results exchanged", {"exchange"}),
    ("studies in, results out", {"study", "report", "importers"}),
    ("engines and tools", {"engines", "workloads"}),
    ("lifecycle", {"lifecycle"}),
    ("store", {"store"}),
    ("machine and numbers", {"stats", "host"}),
    ("the server's view", {"serverside"}),
    ("foundations", {"interfaces", "model", "records", "errors", "execute", "lazy", "shield",
                     "bulk", "masking", "limits", "atomic", "inbound", "__init__"}),
]
RANK = {unit: rank for rank, (_, units) in enumerate(LAYERS) for unit in units}
# The foundations are modules that import one another (in no cycle); packages of one
# layer are separate rooms.
ONE_ANOTHER = {"foundations"}
# Imports that climb a layer, each with its reason (none now: keep it so).
EXCEPTIONS: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(["dbarena", *parts])


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "dbarena")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "dbarena":
                continue
            for alias in node.names:
                # `from dbarena import session` names a module; `from dbarena.x import f` a name in x.
                candidate = f"{base}.{alias.name}"
                found.add(candidate if (SRC / Path(*candidate.split(".")[1:])).with_suffix(".py").exists()
                          or (SRC / Path(*candidate.split(".")[1:])).is_dir() else base)
    return found


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.cache
def _graph() -> dict[str, frozenset[str]]:
    """Each module's dbarena imports: the tree parsed once for the three tests (a second each)."""
    return {_module_name(p): frozenset(_imports(p, _module_name(p))) for p in sorted(SRC.rglob("*.py"))}


def test_every_unit_of_the_tree_has_a_layer():
    units = {_unit(m) for m in _graph()}
    assert units - set(RANK) == set(), "a package or root module the layers do not name"
    assert set(RANK) - units == set(), "a layer names what the tree no longer has"


def test_imports_stay_in_their_layer_or_point_down():
    wrong = []
    for module, targets in _graph().items():
        source = _unit(module)
        for target in targets:
            unit = _unit(target)
            if unit == source or (source, unit) in EXCEPTIONS:
                continue
            if RANK[unit] < RANK[source]:
                wrong.append(f"{module} -> {target} (climbs from {LAYERS[RANK[source]][0]} to {LAYERS[RANK[unit]][0]})")
            elif RANK[unit] == RANK[source] and LAYERS[RANK[unit]][0] not in ONE_ANOTHER:
                wrong.append(f"{module} -> {target} (two packages of one layer)")
    assert wrong == [], "\n".join(wrong)


def test_no_module_imports_itself_round_a_cycle():
    graph = _graph()
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(module: str, path: list[str]) -> bool:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if target not in graph or target == module:
                continue
            if state.get(target) == 1:
                cycle.extend(path[path.index(target):] + [target] if target in path else [module, target])
                return True
            if target not in state and visit(target, [*path, target]):
                return True
        state[module] = 2
        return False

    for module in sorted(graph):
        if module not in state and visit(module, [module]):
            break
    assert cycle == []


ARCHITECTURE = SRC.parents[1] / "docs" / "architecture.md"
TOP = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def _block(section: str) -> list[str]:
    """The indented block (Markdown's code block) under architecture.md's `## section`."""
    text = ARCHITECTURE.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in text.splitlines() if line.startswith("    ")]


def _documented() -> tuple[set[str], set[str]]:
    """The modules architecture.md lists (paths under src/dbarena), each in its own
    package's entry, and the paths of modules it names anywhere there (another package's
    `store/merge.py` in exchange's entry: a reference, not a listing). A bare name in a
    package's entry is looked for under the package, below it too (fleet's playbooks/)."""
    listed: set[str] = set()
    named: set[str] = set()
    for line in _block("Root modules"):
        match = re.match(r"\s{6}(\w+\.py)\s", line)
        if match:
            listed.add(match.group(1))
    package = ""
    for line in _block("Packages"):
        entry = re.match(r"\s{6}(\w+)/\s", line)
        if entry:
            package = entry.group(1)
        for name in re.findall(r"(?<![\w./])((?:\w+/)*\w+\.py)\b", line):
            head = name.split("/")[0]
            if head in TOP and "/" in name:
                named.add(name)
                continue
            under = sorted(str(p.relative_to(SRC)) for p in (SRC / package).rglob(Path(name).name)
                           if str(p.relative_to(SRC)).endswith(name))
            listed.update(under if len(under) == 1 else [f"{package}/{name}"])
    return listed, named


def test_architecture_md_lists_every_module_and_no_module_that_is_gone():
    tree = {str(p.relative_to(SRC)) for p in SRC.rglob("*.py")}
    # A package's __init__.py is the package itself, which the entry names.
    required = {m for m in tree if not (m.endswith("/__init__.py"))}
    listed, named = _documented()
    assert sorted(required - listed) == [], "modules docs/architecture.md does not list"
    assert sorted((listed | named) - tree) == [], "docs/architecture.md names modules that are not in src/dbarena"


def test_architecture_md_names_by_dots_only_modules_there_are():
    """`stats.outliers` in the text (an import's target): a module or subpackage of the
    package, or a name its __init__.py defines or hands on (`study.apply`)."""
    gone = []
    for package, name in set(re.findall(r"(?<![\w/.])(?:dbarena\.)?(\w+)\.(\w+)\b", ARCHITECTURE.read_text())):
        if package not in TOP or name == "py":
            continue
        init = (SRC / package / "__init__.py").read_text()
        if not ((SRC / package / f"{name}.py").exists() or (SRC / package / name).is_dir()
                or re.search(rf"\b{name}\b", init)):
            gone.append(f"{package}.{name}")
    assert sorted(gone) == []


# Private names reached from another module that stay, each with why.
PRIVATE_REACHED: set[tuple[str, str]] = {
    # the store's connection helpers, which issue 57's store change (another branch)
    # makes its own API: dialect, database and merge reach store/postgres.py's
    ("dbarena.store.database", "dbarena.store.postgres._first_line"),
    ("dbarena.store.dialect", "dbarena.store.postgres._first_line"),
    ("dbarena.store.dialect", "dbarena.store.postgres._scalar"),
    ("dbarena.store.merge", "dbarena.store.postgres._first_line"),
}


def _private_reached(path: Path, module: str) -> set[tuple[str, str]]:
    """(module, the private name it takes from another dbarena module): by `from m import
    _name`, or as `m._name` of a module it imported."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    modules: dict[str, str] = {}  # a name bound to a dbarena module -> that module
    found: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update({(a.asname or a.name): a.name for a in node.names if a.name.startswith("dbarena.")})
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "dbarena":
                continue
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if (SRC / Path(*target.split(".")[1:])).with_suffix(".py").exists() \
                        or (SRC / Path(*target.split(".")[1:])).is_dir():
                    modules[alias.asname or alias.name] = target
                elif alias.name.startswith("_") and not alias.name.startswith("__") and base != module:
                    found.add((module, target))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and node.attr.startswith("_") and not node.attr.startswith("__") \
                and modules[node.value.id] != module:
            found.add((module, f"{modules[node.value.id]}.{node.attr}"))
    return found


def test_no_module_takes_a_private_name_of_another():
    """A name with a leading underscore is its module's own: another module that needs it
    needs it public (tests may reach in; src/ may not)."""
    reached = set().union(*(_private_reached(p, _module_name(p)) for p in sorted(SRC.rglob("*.py"))))
    assert sorted(reached - PRIVATE_REACHED) == []


# ---------------------------------------------------------------- the store's own SQL
#
# The store's tables are the store's (store/): every other module reads and writes them
# through Store's public methods (issue 57: exchange/ once copied its column lists, so
# that every migration had to be repeated there). No module outside store/ reaches the
# store's connection (`.db`, its `.dialect`), a private member of Store, the classes
# and functions of store/dialect.py and store/postgres.py that open or take a
# connection, nor sqlite3.connect; and no SQL statement is written outside store/ but
# where a module talks to a database that is not the result store:
SQL_ELSEWHERE = {
    "engines": "the benchmarked server's settings, size and users (its own catalogue)",
    "serverside": "the benchmarked server's statistics, sampled while a point runs",
    "workloads": "the benchmark's own tables (TPC-C's consistency checks)",
}
# Private names of Store that other objects have too, where a module reads those.
NOT_A_STORE = {("fleet", "_host"): "Ansible's TaskResult._host (fleet/callbacks/dbarena_json.py)"}
# The store's connection, and the dialect that holds it.
CONNECTION_ATTRIBUTES = {"db", "dialect"}
# What of store/dialect.py and store/postgres.py other modules may use: none opens or
# takes the store's connection.
DIALECT_PUBLIC = {
    "dbarena.store.dialect": {"file_identity", "sqlite_copy", "refuse_foreign", "read_only_uri", "not_ours"},
    "dbarena.store.postgres": {"is_url", "check_url", "errors"},
}
# Modules that connect to a database themselves: the benchmarked server's.
CONNECTS = {"engines": "the benchmarked server (psycopg, pymysql)"}
_SQL = re.compile(r"\b(?:SELECT\b[\s\S]*?\bFROM|INSERT\s+(?:OR\s+[A-Z]+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b")
_DRIVERS = {"sqlite3", "psycopg", "pymysql", "sqlalchemy"}


@functools.cache
def _store_private() -> frozenset[str]:
    """Store's private members (store/database.py): its methods, class attributes and
    the attributes it sets on itself whose names begin with one underscore."""
    tree = ast.parse((SRC / "store" / "database.py").read_text())
    store = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Store")
    names: set[str] = set()
    for node in ast.walk(store):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id == "self":
            names.add(node.attr)
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__"))


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def store_trespasses(source: str, unit: str) -> list[str]:
    """What a module outside store/ (of package or root module `unit`) does that only
    the store may: each as `line: what`."""
    tree = ast.parse(source)
    found: list[str] = []
    private = _store_private()
    aliases: dict[str, str] = {}  # a name bound to store/dialect.py or store/postgres.py
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in DIALECT_PUBLIC:
            found += [f"{node.lineno}: imports {a.name} of {node.module}" for a in node.names
                      if a.name not in DIALECT_PUBLIC[node.module]]
        elif isinstance(node, ast.ImportFrom) and node.module == "dbarena.store":
            aliases.update((a.asname or a.name, f"dbarena.store.{a.name}") for a in node.names
                           if f"dbarena.store.{a.name}" in DIALECT_PUBLIC)
        elif isinstance(node, ast.Import):
            aliases.update((a.asname, a.name) for a in node.names if a.name in DIALECT_PUBLIC and a.asname)
    # Docstrings are prose; an f-string's parts are read with it, as one text.
    skipped = _docstrings(tree) | {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            receiver = node.value.id if isinstance(node.value, ast.Name) else None
            if node.attr in CONNECTION_ATTRIBUTES:
                found.append(f"{node.lineno}: .{node.attr} (the store's connection)")
            elif node.attr in private and receiver not in ("self", "cls") \
                    and (unit, node.attr) not in NOT_A_STORE:
                found.append(f"{node.lineno}: .{node.attr} (a private member of Store)")
            elif receiver in aliases and node.attr not in DIALECT_PUBLIC[aliases[receiver]]:
                found.append(f"{node.lineno}: {receiver}.{node.attr} of {aliases[receiver]}")
            elif receiver in _DRIVERS and node.attr == "connect" and unit not in CONNECTS:
                found.append(f"{node.lineno}: {receiver}.connect")
        text = None
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            text = node.value
        if text is not None and unit not in SQL_ELSEWHERE and (m := _SQL.search(text)) is not None:
            found.append(f"{node.lineno}: SQL {m.group(0)[:40]!r}")
    return sorted(found, key=lambda f: int(f.split(":")[0]))


def test_only_the_store_touches_its_tables_and_its_connection():
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        unit = _unit(_module_name(path))
        if unit == "store":
            continue
        wrong += [f"{path.relative_to(SRC)}:{line}" for line in store_trespasses(path.read_text(), unit)]
    assert wrong == [], "\n".join(wrong)


def test_the_store_rule_sees_each_trespass():
    """The rule itself, on a module that does each thing the store keeps to itself."""
    source = '''
"""SELECT label FROM runs (a docstring may say it)."""
import sqlite3
from dbarena.store import postgres as pgstore
from dbarena.store.dialect import SQLite, file_identity

def f(db, path):
    with db._writing():
        db.db.execute(f"INSERT INTO points ({columns}) VALUES (?)", ())
    db.dialect.new_ids("runs", 1)
    db._insert_run(None, "imported")
    pgstore.Connection("postgresql://x")
    sqlite3.connect(path)
    rows = "SELECT command, exit_code FROM points WHERE id = ?"
    self._writing = True  # (a class of its own may use the name)
    return pgstore.is_url(path), file_identity(path)
'''
    found = [line.split(": ", 1)[1] for line in store_trespasses(source, "exchange")]
    assert sorted(found) == sorted([
        "imports SQLite of dbarena.store.dialect",
        "._writing (a private member of Store)",
        ".db (the store's connection)",
        "SQL 'INSERT INTO'",
        ".dialect (the store's connection)",
        "._insert_run (a private member of Store)",
        "pgstore.Connection of dbarena.store.postgres",
        "sqlite3.connect",
        "SQL 'SELECT command, exit_code FROM'",
    ])
    # Where a module talks to another database: its SQL and its connections are its own.
    # (but the store's connection and Store's members are no more theirs than anyone's)
    assert store_trespasses(source, "engines") == [
        f for f in store_trespasses(source, "exchange") if " SQL " not in f and not f.endswith("sqlite3.connect")]
