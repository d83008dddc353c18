"""The run flags (flags.py's table) as click options, and studies built from given
values or from a command line.

One library call turns what a user typed into a study, for every front end: the
command line's `run` and `study check`, and the fleet's host side, which must know
whether its store already holds the run its arguments describe (fleet/host.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import click

from dbarena.errors import UsageError
from dbarena.limits import quoted, setting_problem
from dbarena.study.apply import apply, implicit
from dbarena.study.flags import (
    Choice, Directory, Float, Int, Overrides, Pairs, RunFlag, Switch, Text, overrides, run_flags,
)
from dbarena.study.model import Study, check_bounds
from dbarena.study.reader import load

STUDY_OPTION = "study_name"


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange without nan and inf, which float() reads from 'nan' and
    '1e999' and which pass its bounds (nan compares false with every bound)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def _pairs(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> dict[str, str]:
    settings = {}
    for item in values:
        name, sep, val = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{quoted(item)} is not NAME=VALUE")
        problem = setting_problem(name.strip(), val)  # as a study file's (limits.py)
        if problem is not None:
            raise click.BadParameter(f"{quoted(name.strip())}: {problem}")
        settings[name.strip()] = val
    return settings


def _parsed(parse: Callable[[str], Any]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return parse(value)
        except UsageError as exc:
            raise click.BadParameter(str(exc)) from None
    return callback


def _option(flag: RunFlag) -> Callable[[Any], Any]:
    """The click option of one run flag."""
    kind = flag.kind
    extra: dict[str, Any] = {"help": flag.help, "metavar": flag.metavar, "multiple": flag.multiple}
    if isinstance(kind, Int):
        extra["type"] = click.IntRange(min=kind.min, max=kind.max)
    elif isinstance(kind, Float):
        extra["type"] = FiniteFloatRange(min=kind.min, max=kind.max, min_open=kind.min_open)
    elif isinstance(kind, Choice):
        extra["type"] = click.Choice(kind.choices)
    elif isinstance(kind, Switch):
        extra["is_flag"] = True
    elif isinstance(kind, Pairs):
        extra["callback"] = _pairs
    elif isinstance(kind, Directory):
        extra["type"] = click.Path(file_okay=False, path_type=Path)
    elif isinstance(kind, Text) and kind.parse is not None:
        extra["callback"] = _parsed(kind.parse)
    return click.option(flag.flag, flag.name, **extra)


def _study_option() -> Callable[[Any], Any]:
    return click.option("--study", STUDY_OPTION, metavar="FILE|NAME",
                        help="A study file, or a bundled study (see `dbarena study list`). Flags given with it "
                             "override the file's values.")


def run_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options `run` and `study check` share: a study, and the flags over it."""
    for option in reversed([_study_option(), *(_option(flag) for flag in run_flags())]):
        f = option(f)
    return f


def make_study(study_name: str | None, given: Overrides) -> Study:
    """A bundled study or a study file with the flags over it; flags alone: the implicit
    study they stand for. Every number and name checked against limits.py's bounds (the
    flags' as click read them; a study file's here), before anything starts."""
    if study_name is None:
        return check_bounds(implicit(given))
    return check_bounds(apply(load(study_name), given))


def study_from_values(values: Mapping[str, Any]) -> Study:
    """The study of `run`'s option values (by the options' parameter names)."""
    return make_study(values.get(STUDY_OPTION), overrides(values))


def study_from_args(argv: Sequence[str]) -> Study:
    """The study a `dbarena run` command line describes. Options that are not about the
    study (--store, --keep ...) are ignored; a bad flag is a UsageError."""
    command = click.Command("run", params=[], context_settings={"ignore_unknown_options": True,
                                                                 "allow_extra_args": True})
    run_options(command)  # click.option on a Command appends to its params
    try:
        with command.make_context("run", list(argv), resilient_parsing=False) as ctx:
            values = dict(ctx.params)
    except click.exceptions.ClickException as exc:
        raise UsageError(exc.format_message()) from None
    return study_from_values(values)
