"""A small real store, every table filled, built with the library: two labels (a, b),
two levels, three repeats each, with per-second samples, system samples, a latency
histogram, the server's series, a failed point and a study. What the store-edge tests
edit cell by cell (tests/unit/test_store_edge.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from dbarena.host.sysmetrics import SystemSample
from dbarena.model import Measurement, PointResult, PointSpec, RunInfo, Sample, StudyRecord
from dbarena.serverside.series import ServerSeries
from dbarena.stats import analysis, configkey, latency
from dbarena.store.database import Store

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
HOST = {"cpu_model": "test cpu", "hardware_threads": 2, "memory_bytes": 8 * 2 ** 30, "kernel": "6.1.0"}
WOBBLE = (1.0, 1.004, 0.996)


def _point(label_tps: float, level: int, repeat: int, *, day: int) -> PointResult:
    spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=level, clients=level, duration_s=4,
                     params=(("scale", 1),), repeat=repeat)
    tps = label_tps * level * WOBBLE[repeat % 3]
    hist = latency.Latencies(source="pgbench log")
    hist.record_counts([900 + 10 * k for k in range(5)], [3, 5, 7, 5, 3])
    samples = tuple(Sample(second=float(s), tps=tps * (1 + 0.01 * (s % 2)), latency_ms=1.0, failed=0)
                    for s in range(1, 5))
    system = tuple(SystemSample(second=float(s), cpu_user_pct=30, cpu_system_pct=10, cpu_iowait_pct=1.0,
                                cpu_steal_pct=0, cpu_idle_pct=60.0, context_switches_per_s=100.0,
                                disk_read_bytes_per_s=0.0, disk_write_bytes_per_s=10.0, memory_used_bytes=2 ** 30,
                                server_cpu=0.8, loadgen_cpu=0.2) for s in range(1, 5))
    server = ServerSeries(engine="postgres", seconds=(1.0, 2.0), series={"wait.CPU": (1.0, 0.5)}, notes=(),
                          stopped=None, bound="server CPU", evidence="server 0.8 of 2 hardware threads",
                          figures={"wait.CPU": 0.75})
    return PointResult(spec=spec, status="ok", started_at=T0 + timedelta(days=day),
                       ended_at=T0 + timedelta(days=day, seconds=4), command=("pgbench", "-c", str(level)),
                       exit_code=0, stdout="tps = 1\n", stderr="",
                       measurement=Measurement(tps=tps, transactions=int(tps * 4), latency_avg_ms=1.0,
                                               latency_histogram=hist.encode(), details={"mode": "simple"}),
                       samples=samples, system=system, server=server)


def build(path: Path, *, derive: bool = True) -> Path:
    """The store at `path`; with `derive`, its derived figures cached too."""
    study = StudyRecord(name="edge", source="flags", text="engines: [postgres]\n", sha256="ab" * 32)
    with Store(path) as db:
        for day, (label, tps) in enumerate((("a", 1000.0), ("b", 900.0), ("a", 1010.0))):
            run_id = db.begin_run(RunInfo(
                label=label, host="box", engine="postgres", target="postgresql://dbarena@127.0.0.1:1/dbarena",
                started_at=T0 + timedelta(days=day), server_version="17.2",
                tool_versions={"pgbench": "pgbench 17.2"}, options={"targets": {}}, host_facts=HOST,
                target_facts={"settings": {"synchronous_commit": "on"}}, price_per_hour=0.5, currency="USD",
                study=study))
            for level in (1, 2):
                for repeat in range(3):
                    config = configkey.build(
                        engine="postgres", workload="pgbench-tpcb", threads=level, clients=level, duration_s=4,
                        warmup_s=0, params={"scale": 1}, options={}, settings={"synchronous_commit": "on"},
                        variant="", server_version="17.2", flavour="postgresql", host=configkey.host_identity(HOST))
                    db.add_point(run_id, _point(tps, level, repeat, day=day), config=config)
            failed = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=4, clients=4, duration_s=4,
                               params=(("scale", 1),))
            db.add_point(run_id, PointResult(spec=failed, status="failed", started_at=T0, ended_at=T0,
                                             command=("pgbench",), exit_code=1, stdout="", stderr="boom",
                                             error="pgbench: error: boom"))
            db.finish_run(run_id, "finished")
        if derive:
            analysis.load(db)
    return path
