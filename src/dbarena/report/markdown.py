"""The Markdown report: the same tables, charts as SVG files next to it (and PNG with
--png), ready to paste into an article."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from dbarena import atomic
from dbarena.errors import EnvironmentProblem, UsageError
from dbarena.report import data
from dbarena.report.data import Report
from dbarena.report.decision import markdown as decision_markdown
from dbarena.report.escaping import md_text
from dbarena.report.levelprofiles import LevelProfile, ProfileDifference
from dbarena.report.profiletables import profile_tables
from dbarena.report.tables import TableSpec, how_to_read, provenance, rate_levels, section_tables, what_differs


def _table(spec: TableSpec) -> str:
    # Titles, headers, cells and notes hold labels, settings, versions, hosts: md_text.
    lines = [f"### {md_text(spec.title)}", "", "| " + " | ".join(md_text(h) or " " for h in spec.headers) + " |",
             "|" + "|".join(":--" if i == 0 else "--:" for i in range(len(spec.headers))) + "|"]
    lines += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in spec.rows]
    if spec.note:
        lines += ["", f"_{md_text(spec.note)}_"]
    return "\n".join(lines) + "\n"


def render(report: Report, charts: dict[tuple[str, str], dict[str, str]], out: Path,
           pngs: dict[tuple[str, str], dict[str, bytes]] | None = None,
           level_profiles: Sequence[LevelProfile] = (), profile_changes: Sequence[ProfileDifference] = ()) -> str:
    """Writes the charts into `<out stem>_files/` and returns the Markdown text; with
    `pngs` (--png) the PNG files beside the SVG ones, and the text shows those (many
    sites an article goes to take no SVG). `level_profiles`, `profile_changes`: each
    section's pooled on-CPU profiles and their differentials (report/levelprofiles.py),
    listed after its tables."""
    folder = out.parent / f"{out.stem}_files"
    parts = ["# dbarena report", "",
             f"Labels: {', '.join(md_text(l) for l in report.labels)}. Baseline: {md_text(report.baseline or '-')}. "
             f"{data.at_text(report)}", ""]
    if report.decisions:
        # The answer first: the block a pull request or an article quotes.
        parts += ["## Decision", "", decision_markdown(report.decisions, report.overall)]
    split = what_differs(report)
    if split is not None:
        differ, same = split
        parts += ["## What differs", "", _table(differ),
                  f"<details><summary>{len(same.rows)} facts and settings the same for every label</summary>", "",
                  _table(same), "</details>", ""]
    # What each table and the charts show, once (under each table: what is particular to it).
    # dbarena's own text (reading.py), written as Markdown: its `code` stays code.
    parts += ["## How to read this", ""]
    parts += [f"**{what}.** {text}\n" for what, text in how_to_read(report)]
    at_rate = rate_levels(report)
    if at_rate is not None:
        parts += ["## Latency at offered rates", "", _table(at_rate)]
    for s in report.sections:
        parts += [f"## {md_text(s.engine)} {md_text(s.workload)}", ""]
        for name, svg in charts.get((s.engine, s.workload), {}).items():
            _make(folder)
            # Each chart file whole or not at all, as the report itself (atomic.py).
            path = folder / f"{s.engine}-{s.workload}-{name}.svg"
            atomic.write_text(path, svg)
            png = (pngs or {}).get((s.engine, s.workload), {}).get(name)
            if png:
                path = path.with_suffix(".png")
                atomic.write_bytes(path, png)
            # The file's name comes from -o, the engine and the workload: percent-encoded,
            # so that no space or ")" in it ends the link early.
            parts += [f"![{md_text(f'{s.engine} {s.workload} ' + name.replace('_', ' '))}]"
                      f"({quote(f'{folder.name}/{path.name}')})", ""]
        parts += [_table(t) for t in section_tables(s, report)]
        parts += [_table(t) for t in profile_tables(s.engine, s.workload, level_profiles, profile_changes)]
    parts += ["## Provenance", "", _table(provenance(report))]
    return "\n".join(parts)


def _make(folder: Path) -> None:
    """The chart folder beside the report; one line when it cannot be made."""
    try:
        folder.mkdir(exist_ok=True)
        mode = os.lstat(folder).st_mode
    except OSError as exc:
        raise EnvironmentProblem(f"cannot make {folder}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(mode):
        # A symbolic link to a directory too: dbarena writes nothing through one (atomic.py).
        raise UsageError(f"cannot write charts into {folder}: it is {atomic.kind_of(mode)}, not a directory")
