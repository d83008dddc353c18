"""The seams that let a tool give its point files and standard input (interfaces.PointInput):
LocalExecutor runs a real command in a work directory with input on its stdin; the
sweep writes a tool's files into the point's own work directory, runs the tool there
with its stdin (through the fake executor of test_sweep, and through LocalExecutor
with a real `sh`), and removes the directory after the point; and the dataset steps of
workloads that keep no dataset of the tool's or use it up (sysbench's bulk_insert and
oltp_delete).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Sequence

import pytest
from test_sweep import FakeExecutor, rig  # noqa: F401 - rig is the fixture of the sweep tests

from dbarena import execute
from dbarena.run import dataset_lifecycle, measure, runner
from dbarena.errors import ParseError
from dbarena.execute import Completed
from dbarena.interfaces import Client, PointInput
from dbarena.model import Measurement, PointSpec, Sample
from dbarena.workloads import WORKLOADS, Workload
from dbarena.workloads.base import ToolBase

SCRIPT = "# a script the tool wrote\nrows=3\n"
STDIN = "fed on stdin: é\n"

# ------------------------------------------------------------------ LocalExecutor


def test_local_executor_feeds_stdin_to_a_command_that_reads_a_file_of_its_work_directory(tmp_path):
    (tmp_path / "script").write_text(SCRIPT)
    done = execute.LOCAL.run(["sh", "-c", "cat script; cat -"], cwd=tmp_path, stdin=STDIN, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (0, SCRIPT + STDIN, "")
    # Bytes go as they are; without stdin the command reads /dev/null (no hang on a tty).
    done = execute.LOCAL.run(["sh", "-c", "cat script; cat -"], cwd=str(tmp_path), stdin=b"\x00raw\n", timeout=30)
    assert done.stdout == SCRIPT + "\x00raw\n"
    done = execute.LOCAL.run(["sh", "-c", "cat -; echo end"], timeout=30)
    assert done.stdout == "end\n"


def test_local_executor_input_a_command_never_reads_does_not_block():
    started = time.monotonic()
    done = execute.LOCAL.run(["true"], stdin="x" * 10_000_000, timeout=30)
    assert done.returncode == 0 and not done.timed_out and time.monotonic() - started < 20


def test_local_executor_a_missing_work_directory_is_not_a_missing_tool(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        execute.LOCAL.run(["sh", "-c", "true"], cwd=tmp_path / "gone", timeout=30)
    assert not isinstance(caught.value, execute.ToolMissing)


# ------------------------------------------------------------------ the sweep


class ScriptTool(ToolBase):
    """A tool whose point runs `sh`: it reads the script the tool wrote into the
    point's work directory, then its standard input; it prints tps=N."""

    name = "script-tool"
    binary = "sh"

    def point_argv(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> list[str]:
        return [client.binary, "-c", "cat script.txt; cat -; echo tps=$(wc -l < script.txt)"]

    def point_input(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> PointInput:
        return PointInput(files={"script.txt": SCRIPT, "data.bin": b"\x01\x02"}, stdin=STDIN)

    def read(self, stdout: str, stderr: str, spec: PointSpec | None) -> tuple[Measurement, tuple[Sample, ...]]:
        m = re.search(r"^tps=(\d+)$", stdout, re.M)
        if m is None:
            raise ParseError(self.name, "no tps line")
        return Measurement(tps=float(m[1]), details={"stdout": stdout}), ()


TOOL = ScriptTool()


@pytest.fixture
def script_workload(monkeypatch):
    monkeypatch.setitem(WORKLOADS, "script", Workload("script", ("postgres",), TOOL, (), "a script", ()))
    return "script"


def point(workload: str, threads: int = 1, **fields: Any) -> PointSpec:
    return PointSpec(engine="postgres", workload=workload, threads=threads, clients=threads, duration_s=5, **fields)


def test_the_sweep_writes_the_tools_files_into_the_points_work_directory_and_feeds_its_stdin(
        rig, script_workload):  # noqa: F811
    seen: dict = {}

    def answer(argv: tuple) -> Completed:
        call = rig.executor.calls[-1]
        seen.update(call, exists=Path(call["cwd"]).is_dir())
        out = call["files"]["script.txt"].decode() + call["stdin"] + "tps=2\n"
        return Completed(argv=argv, returncode=0, stdout=out, stderr="", elapsed_s=0.1)

    rig.executor.on(lambda argv: argv[0] == "sh", answer)
    (result,) = rig.sweep().run([point(script_workload)])
    assert result.ok and result.measurement.tps == 2.0
    assert result.stdout == SCRIPT + STDIN + "tps=2\n"
    work = Path(seen["cwd"])
    assert seen["exists"] and work.name.startswith("dbarena-point-")
    assert seen["files"] == {"data.bin": b"\x01\x02", "script.txt": SCRIPT.encode()}
    assert seen["stdin"] == STDIN
    assert not work.exists()  # removed with the point


def test_the_sweep_runs_the_real_command_in_the_work_directory(rig, script_workload):  # noqa: F811
    sweep = rig.sweep()
    sweep.executor = execute.LOCAL
    first, second = sweep.run([point(script_workload, 1), point(script_workload, 2)])
    for result in (first, second):
        assert result.ok, result.error
        assert result.stdout == SCRIPT + STDIN + "tps=2\n" and result.measurement.tps == 2.0
    assert [r["status"] for r in rig.stored()] == ["ok", "ok"]


def test_every_point_has_a_work_directory_of_its_own_and_the_latency_log_goes_there(rig):  # noqa: F811
    plan = [point("pgbench-select-only", 1, params=(("scale", 1),), warmup_s=2), point("sysbench-read-only", 2,
            params=(("table_size", 1000), ("tables", 2)))]
    rig.sweep(latency_sampling=1.0).run(plan)
    runs = [c for c in rig.executor.calls if c["cwd"] is not None]
    assert len(runs) == 3  # the warm-up, the pgbench point, the sysbench point: the prepares have none
    assert len({c["cwd"] for c in runs}) == 3
    for call in runs:
        assert call["files"] == {} and call["stdin"] is None and not Path(call["cwd"]).exists()
    pgbench = runs[1]["argv"]
    assert pgbench[pgbench.index("--log-prefix") + 1].startswith(str(runs[1]["cwd"]) + "/")


def test_a_tool_file_must_have_a_plain_name(tmp_path):
    for bad in ("../escape", "sub/dir", "", ".."):
        with pytest.raises(ValueError):
            measure.write_point_files(tmp_path, {bad: "x"})
    measure.write_point_files(tmp_path, {"ok.lua": "x", "b": b"y"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "ok.lua"]
    assert (tmp_path / "ok.lua").stat().st_mode & 0o777 == 0o600


# ------------------------------------------------------------------ datasets of sysbench's scripts

SIZES = (("table_size", 1000), ("tables", 1))


def steps(plan: list[PointSpec]) -> list[tuple[list, list]]:
    return [([(a, plan.index(s)) for a, s in before], [(a, plan.index(s)) for a, s in after])
            for before, after in dataset_lifecycle.dataset_steps(plan)]


def test_bulk_insert_points_keep_no_dataset_and_leave_the_shared_one_alone():
    plan = [point("sysbench-read-only", 1, params=SIZES), point("sysbench-bulk-insert", 1, params=SIZES),
            point("sysbench-bulk-insert", 2, params=SIZES), point("sysbench-point-select", 1, params=SIZES)]
    assert steps(plan) == [([("prepare", 0)], []), ([], []), ([], []), ([], [])]
    # Alone, nothing is prepared at all (the point makes its own tables).
    assert steps(plan[1:3]) == [([], []), ([], [])]


def test_delete_points_get_the_dataset_afresh_whatever_the_lifecycle():
    for datasets in ("run", "workload"):
        plan = [point("sysbench-point-select", 1, params=SIZES, datasets=datasets),
                point("sysbench-delete", 1, params=SIZES, datasets=datasets),
                point("sysbench-delete", 2, params=SIZES, datasets=datasets),
                point("sysbench-point-select", 2, params=SIZES, datasets=datasets)]
        got = steps(plan)
        assert got[1] == ([("cleanup", 0), ("prepare", 1)] if datasets == "run" else [("prepare", 1)],
                          [("cleanup", 1)])
        assert got[2] == ([("prepare", 2)], [("cleanup", 2)])
        assert got[3][0] == [("prepare", 3)]


def test_the_sweep_skips_the_prepare_for_bulk_insert_and_gives_it_its_script(rig):  # noqa: F811
    rig.executor.on(lambda argv: argv[0] == "sysbench" and argv[-1] == "run", lambda argv: Completed(
        argv=argv, returncode=0, elapsed_s=5.0, stderr="",
        stdout=(Path(__file__).parent.parent / "fixtures" / "sysbench" / "captured" /
                "sysbench-1.0.20-bulk-insert-mysql-histogram.stdout").read_text()))
    (result,) = rig.sweep().run([point("sysbench-bulk-insert", 1, params=SIZES)])
    assert result.ok and result.measurement.tps == 212036.86
    (call,) = rig.executor.calls  # no prepare, no cleanup
    assert call["argv"][1] == "dbarena_bulk_insert.lua" and set(call["files"]) == {"dbarena_bulk_insert.lua"}
    assert b"bulk_insert" in call["files"]["dbarena_bulk_insert.lua"]
