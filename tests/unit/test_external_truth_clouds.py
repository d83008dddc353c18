"""sysbench 1.0.17 on five clouds' managed PostgreSQL 15 (holdout-2/nidmgh-sysbench-clouddb in
tests/fixtures/external-truth, SOURCES.tsv): imported through the CLI as a user would, the
authors' spreadsheets come back. See test_external_truth.py for the other sources."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest

from conftest import cli_env
from inprocess import dbarena  # the CLI, in process: a user's command line, without a second's start each
from test_external_truth import ET, _import


@pytest.fixture()
def env(tmp_path):
    return cli_env(tmp_path)


CLOUDS = ET / "holdout-2" / "nidmgh-sysbench-clouddb"
# Each spreadsheet, the raw files under one label, as its sheet reads: run0 and run1
# side by side, and their mean. AWS's third file ("run2") holds 128, 256 and 512
# threads; the sheet takes its 256 and 512 and leaves its 128 (1122.52 TPS) out of the
# 128 row: it is imported under a label of its own, as the author kept it apart.
SHEETS = {
    "Sysbench_AWS_PG15_8C32G.xlsx": {"aws": ["aws-2kiops-sysBench_result0", "aws-2kiops-sysBench_result1"],
                                     "aws-run2": ["aws-2kiops-sysBench_result2"]},
    "Sysbench_Huawei_PG15_8C32G.xlsx": {"huawei": ["huawei-sysBench_result1", "huawei-sysBench_result2"]},
    "Sysbench_Tencent_PG15_8C32G.xlsx": {"tencent": ["tencent-sysBench_result_tencent0",
                                                     "tencent-sysBench_result_tencent1"]},
    "Sysbench_AliPG15_8C32G.xlsx": {"ali": ["ali-sysBench_result_AliPG15"]},
    "Sysbench_GCPPG15_enterprise.xlsx": {"gcp-e": ["gcp-e-sysBench_result_GCPPG15_enterprise"]},
    "Sysbench_GCPPG15_enterpriseP.xlsx": {"gcp-ep": ["gcp-ep-sysBench_result_GCPplus.txt"]},
}


def _sheet_means(path: Path) -> dict[int, tuple[float, float, float]]:
    """Threads -> the sheet's (TPS, QPS, P95) columns: the means over the runs it holds."""
    sheet = openpyxl.load_workbook(path, data_only=True).active
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][:4] == ("Thread", "TPS", "QPS", "P95 latency (ms)")
    return {row[0]: (row[1], row[2], row[3]) for row in rows[1:] if isinstance(row[0], int)}


@pytest.mark.parametrize("sheet", sorted(SHEETS))
def test_sysbench_on_five_clouds_reproduces_the_spreadsheets(sheet, tmp_path, env):
    """sysbench 1.0.17 oltp_read_write, 600 s runs with a report every 60 s and no command
    line: the sheets give the mean over two runs of the TPS, QPS and p95 sysbench printed.
    Those come back as `over_repeats` means, which needs the two runs' points to be one
    configuration although sysbench measured 600.0647 s in one and 600.5517 s in the
    other (the asked 600 s, from the last report line, is the key)."""
    store = tmp_path / "c.db"
    for label, files in SHEETS[sheet].items():
        _import(store, env, label, [CLOUDS / f for f in files], "--engine", "postgres", "--workload",
                "oltp_read_write")
    groups = json.loads(dbarena("results", "--summary", "--json", "--store", str(store), env=env).stdout)
    assert all(g["workload"] == "sysbench-read-write" and g["config"]["duration_s"] == 600 for g in groups)
    by = {}
    for g in groups:
        assert (g["label"], g["threads"]) not in by, f"{g['label']} {g['threads']}: two configurations"
        by[(g["label"], g["threads"])] = g
    main = next(iter(SHEETS[sheet]))
    for threads, (tps, qps, p95) in _sheet_means(CLOUDS / "published" / sheet).items():
        label = "aws-run2" if main == "aws" and threads > 128 else main
        figures = by[(label, threads)]["over_repeats"]
        runs = 1 if label == "aws-run2" else len(SHEETS[sheet][main])
        if main == "tencent" and threads != 128:
            runs = 1  # tencent0 holds 2..128 threads, tencent1 128..512: only 128 has two
        assert figures["tps"]["n"] == runs, (threads, figures["tps"])
        assert figures["tps"]["mean"] == pytest.approx(tps, rel=1e-9), threads
        assert figures["latency_p95_ms"]["mean"] == pytest.approx(p95, rel=1e-9), threads
        assert figures["latency_p95_ms"]["mean_is"] == f"mean of printed p95 (ms) over {runs} run{'s' * (runs > 1)}"
        if main == "huawei" and threads == 8:
            # The author's slip (holdout-2/SOURCES.tsv): run0's QPS typed as 28429.42 where
            # huawei-sysBench_result1 prints 29429.42 queries per second.
            assert qps == pytest.approx((28429.42 + 27561.04) / 2)
            assert (figures["qps"]["min"], figures["qps"]["max"]) == (27561.04, 29429.42)
        else:
            assert figures["qps"]["mean"] == pytest.approx(qps, rel=1e-9), threads
