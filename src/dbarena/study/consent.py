"""What a study may do without the user's word: nothing that runs a command or loads
code on the machine that runs it.

A study file is shared, published and copied to every host of a fleet, and dbarena
often runs as root. So what in it would make a server run a command or load code
(the settings each engine declares in `code_settings`: archive_command,
shared_preload_libraries, plugin_load_add ...; the tool options each tool declares:
mysqlslap's pre-system, a pgbench script with \\shell) and a `bindir` (whose binaries
dbarena runs) are refused unless the user types `--allow-commands`. What the user types on the
command line (`--pg-setting`, `--mysql-setting`, `--pg-bindir`) is their own doing and
consent already: only what came from the study file counts. The flags a run stored are
not typed now: a bundle's run (`run --like`, carrying its publisher's flags) and a
stored run (`run --resume`, an imported bundle's too) are checked as a study file is,
flags and all; only what is typed with --like or --resume counts as the user's
(`typed`).

`study check` runs nothing of a study in any case: `checkable` gives it the study
without the file's bindirs, so that setting names are checked against the machine's
own binaries (cli/running.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from dbarena import engines, workloads
from dbarena.errors import UsageError
from dbarena.study.model import EngineEntry, Study

FLAG = "--allow-commands"


@dataclass(frozen=True)
class Finding:
    """One thing of a study file that runs a command or loads code."""

    key: str  # where it is in the study: engines.postgres.settings.archive_command
    value: str
    what: str  # "runs a shell command", "its binaries are run"

    def words(self) -> str:
        return f"{self.key} = {self.value!r} ({self.what})"


def findings(study: Study, typed: Mapping[str, Any] | None = None) -> list[Finding]:
    """What of the study, not typed on the command line, runs a command or loads code:
    each engine's settings (and its variants') that the engine declares as such, and a
    bindir. `typed`: the flags typed for this command (Overrides.flags()); None: the
    study's own flags are (`run --study FILE` applies what was typed with it)."""
    flags = study.flags if typed is None else typed
    typed_settings: Mapping[str, Mapping[str, Any]] = flags.get("settings", {})
    typed_bindirs: Mapping[str, Any] = flags.get("bindirs", {})
    found: list[Finding] = []
    for entry in study.engines:
        engine = engines.first(entry.name)
        typed = typed_settings.get(entry.name, {})
        for name, value in entry.settings:
            # A flag overrides the file's value: the same name and value is the user's.
            if name in typed and str(typed[name]) == value:
                continue
            what = engine.code_setting(name)
            if what is not None:
                found.append(Finding(f"engines.{entry.name}.settings.{name}", value, what))
        if entry.bindir and typed_bindirs.get(entry.name) != entry.bindir:
            found.append(Finding(f"engines.{entry.name}.bindir", entry.bindir,
                                 "the server's binaries are run from it"))
    found += _tool_options(study)
    names = {e.name for e in study.engines}
    for variant in study.variants:
        for engine_name, pairs in variant.settings:
            if engine_name not in names:
                continue
            engine = engines.first(engine_name)
            for name, value in pairs:
                what = engine.code_setting(name)
                if what is not None:
                    found.append(Finding(f"variants.{variant.name}.{engine_name}.{name}", value, what))
    return found


def _tool_options(study: Study) -> list[Finding]:
    """The workloads' tool options that run a command or load code (each tool's
    code_option): no flag sets a tool option, so each is the file's."""
    found = []
    for i, w in enumerate(study.workloads):
        tool = workloads.WORKLOADS[w.workload].tool
        for name, value in w.options:
            what = tool.code_option(name, value)
            if what is not None:
                found.append(Finding(f"workloads[{i}] ({w.workload}) options.{name}", value, what))
    return found


def refusal(study: Study, typed: Mapping[str, Any] | None = None, where: str | None = None) -> str | None:
    """One line saying why the study is refused without --allow-commands; None when
    nothing in it needs the user's word. `where` names what it came from (a bundle, a
    stored run) when that is not the study file."""
    found = findings(study, typed)
    if not found:
        return None
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    if where is None:
        return (f"{study.source}: {found[0].words()}{more}: a study file may not run commands or load code "
                f"unless you allow it with {FLAG} (`dbarena study check` lists what)")
    return (f"{where}: {found[0].words()}{more}: what a study, a bundle or a stored run gives may not run "
            f"commands or load code unless you allow it with {FLAG}")


def check(study: Study, allowed: bool, typed: Mapping[str, Any] | None = None, where: str | None = None) -> None:
    """A UsageError (exit 2) when the study needs --allow-commands and it was not given
    (`typed` and `where` as refusal() takes them)."""
    if allowed:
        return
    refused = refusal(study, typed, where)
    if refused is not None:
        raise UsageError(refused)


def checkable(study: Study) -> Study:
    """The study without the bindirs its file gave (a --pg-bindir typed stays): what
    `study check` may look at without running a binary the file named."""
    typed: Mapping[str, Any] = study.flags.get("bindirs", {})

    def without(entry: EngineEntry) -> EngineEntry:
        return entry if not entry.bindir or typed.get(entry.name) == entry.bindir else replace(entry, bindir=None)

    return replace(study, engines=tuple(without(e) for e in study.engines))
