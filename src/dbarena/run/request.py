"""What `dbarena run` is asked to do, resolved before anything starts: the study it runs
(from flags or a study file, a published bundle's with --like, or a stored run's with
--resume), the consent its commands need, and the options that do not go with where it
runs (here, or on machines made for it). The command (cli/running.py) reads options and
prints; everything it decides is here, so that `run`, `run --like` and a [machines]
study are one path each through the library."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbarena import study as study_mod
from dbarena.errors import UsageError
from dbarena.run import resume as resume_mod
from dbarena.store.database import Store
from dbarena.study import arguments, consent
from dbarena.study.apply import check_profile_targets

if TYPE_CHECKING:
    from dbarena.exchange.like import Like


@dataclass(frozen=True)
class Asked:
    """The options of `run` that are not the study's (those are the flags' values)."""

    store: Path | str
    keep: bool = False
    init: bool = True
    resume: str | None = None
    like: Path | None = None
    allow_commands: bool = False
    # Set on a host of a fleet: this run is one host's share, never a [machines] controller.
    progress_file: Path | None = None
    max_cost: float | None = None
    max_instances: int | None = None
    probe_s: int | None = None
    no_probe: bool = False


@dataclass(frozen=True)
class Resolved:
    """The study to run and what it goes on from."""

    study: study_mod.Study
    # Of --resume: the stored run's invocation, and the points each session stored already.
    invocation: str | None = None
    already: tuple[set[resume_mod.Identity], ...] = ()
    # Of --like: the bundle read (imported as the baseline once the run is confirmed).
    like: Like | None = None
    # The flags the user typed (consent.py: what a bundle or a stored run brings is not
    # the user's), and where the rest came from; None: all of it typed.
    typed: dict[str, Any] | None = field(default=None, repr=False)
    where: str | None = None
    # Run on machines made for it ([machines]), not here (a fleet's host runs its share
    # of such a study here).
    on_machines: bool = False


def resolve(asked: Asked, values: dict[str, Any]) -> Resolved:
    """The study `run` runs, its consent checked (before preflight runs a binary it names),
    and every option refused that does not go with where it runs. `values`: the flags'
    (study/flags.py), as click gives them; --like sets the label in it."""
    if asked.like is not None:
        resolved = _liked(asked.like, asked.resume, values)
    elif asked.resume is not None:
        resolved = _resumed(asked.store, asked.resume, values)
    else:
        resolved = Resolved(arguments.study_from_values(values))
    consent.check(resolved.study, asked.allow_commands, resolved.typed, resolved.where)
    check_profile_targets(resolved.study)
    if resolved.study.machines is not None and asked.progress_file is None:
        not_here = [flag for flag, given in (("--resume", asked.resume), ("--keep", asked.keep),
                                             ("--no-init", not asked.init)) if given]
        if not_here:
            raise UsageError(f"{not_here[0]} does not go with a study with [machines] (its hosts are made for the run)")
        return replace(resolved, on_machines=True)
    if asked.max_cost is not None or asked.max_instances is not None:
        raise UsageError(f"{'--max-cost' if asked.max_cost is not None else '--max-instances'} applies to a study "
                         "with [machines] (docs/cloud.md)")
    if asked.keep and all(e.target for e in resolved.study.engines):
        raise UsageError("--keep applies to throwaway instances only, not to --target")
    return resolved


def probe_seconds(probe_s: int | None, no_probe: bool) -> int | None:
    """--probe / --no-probe as the seconds the host probe runs (None: preflight decides)."""
    if no_probe:
        if probe_s:
            raise UsageError(f"--no-probe and --probe {probe_s}: give one")
        return 0
    return probe_s


def refuse_foreign_store(store: Path | str) -> None:
    """A file another program owns is refused before anything is said of the study (the
    store itself is opened, and made if new, only once the study is confirmed)."""
    from dbarena.store.dialect import refuse_foreign

    if isinstance(store, Path) and store.is_file() and store.stat().st_size:
        refuse_foreign(store)


def _liked(path: Path, resume: str | None, values: dict[str, Any]) -> Resolved:
    from dbarena.exchange import like as like_mod

    if resume is not None or values.get(arguments.STUDY_OPTION):
        raise UsageError("--like runs the bundle's study: not with " + ("--resume" if resume else "--study"))
    like = like_mod.read(path)
    # Another label than the bundle's: both runs are in one store, and a decision is
    # between labels.
    values["label"] = values.get("label") or f"{like.label}-here"
    given = study_mod.overrides(values)
    # The bundle's stored flags are its publisher's, not typed here (consent.py).
    return Resolved(like.study(given), like=like, typed=given.flags(), where=f"--like {path}")


def _resumed(store: Path | str, resume: str, values: dict[str, Any]) -> Resolved:
    """The stored plan of the run to resume, its invocation, the points it stored
    (resume.stored_by_session) and the flags typed with --resume (what consent.py counts as
    the user's: the stored ones are not). A study or flags given with --resume must
    describe the same plan."""
    if resume != "latest" and not resume.isdigit():
        raise UsageError(f"--resume {resume!r}: expected a run number (see `dbarena results`)")
    if isinstance(store, Path) and not store.is_file():
        raise UsageError(f"--resume: no store {store}")
    study_name = values.pop(arguments.STUDY_OPTION)
    assert study_name is None or isinstance(study_name, str)  # click's --study: a path or nothing
    overrides = study_mod.overrides(values)
    given = arguments.make_study(study_name, overrides) if study_name is not None or overrides.flags() else None
    with Store(store) as db:
        the_study, invocation = resume_mod.resumed_study(db, None if resume == "latest" else int(resume), given)
        return Resolved(the_study, invocation, resume_mod.stored_by_session(db, invocation), typed=overrides.flags(),
                        where=f"--resume {resume} (the stored run's study and flags)")
