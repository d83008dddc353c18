"""stats/bound.py on series captured from real runs (tests/fixtures/serverside/, by
tests/e2e/test_server_view.py on the project's 2-CPU machine): what bound each point,
and the evidence it gives."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from dbarena.stats import bound, thresholds

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "serverside"


def _load(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def _classify(f: dict, **changed) -> bound.PointBound:
    args = {"hardware_threads": f["hardware_threads"], "loadgen_threads": f["threads"], "clients": f["clients"],
            **changed}
    return bound.classify(bound.readings(f["server"]), f["system"], **args)


# (The captures of a point's classified series: those that stored a bound. The folder holds
# other captures of the server's view too, e.g. a sampler terminated mid-point.)
@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")
                                        if "stored_bound" in json.loads(p.read_text())))
def test_the_stored_bound_is_what_the_stored_series_give(name):
    f = _load(name)
    found = _classify(f)
    assert (found.kind, found.evidence) == (f["stored_bound"], f["stored_evidence"])


def test_contended_tpcb_is_lock_bound_and_names_its_wait_events():
    found = _classify(_load("pg15-tpcb-scale1-16clients"))
    assert found.kind == bound.LOCKS
    assert found.evidence.startswith("Lock:transactionid ") and " active-backend samples" in found.evidence


def test_two_client_updates_wait_for_the_wal_and_the_checkpoint_is_placed():
    f = _load("pg15-simple-update-2clients-checkpoint")
    found = _classify(f)
    assert found.kind == bound.WAL
    at = [round(s) for s, v in zip(f["server"]["seconds"], f["server"]["series"]["checkpoints"]) if v]
    assert at and f"checkpoint at {at[0]} s" in found.evidence


def test_cached_select_only_is_the_cpu_and_its_few_wait_samples_decide_nothing():
    # Its transactions are so short that once-a-second looks caught a backend busy once.
    f = _load("pg15-select-only-scale1-4clients")
    found = _classify(f)
    assert found.kind == bound.MACHINE_CPU
    assert "only 1 active-backend sample(s): too few to tell from the waits" in found.evidence


def test_mariadb_row_lock_waits_are_evidence_and_decide_once_they_hold_enough_clients():
    f = _load("mariadb10.11-update-index-1x10rows-16threads")
    found = _classify(f)
    assert "row lock waits" in found.evidence and found.kind != bound.LOCKS
    # The same waits spread over fewer clients: past WAIT_SHARE of them waiting, locks bound.
    times = [v for v in f["server"]["series"]["status.Innodb_row_lock_time"] if v is not None]
    waiting = sum(times) / len(times) / 1000
    fewer = math.floor(waiting / bound.WAIT_SHARE)
    assert _classify(f, clients=fewer).kind == bound.LOCKS


def test_iowait_past_its_threshold_is_io():
    f = _load("pg15-select-only-scale1-4clients")
    system = [{**s, "cpu_iowait_pct": thresholds.IOWAIT_PCT} for s in f["system"]]
    found = bound.classify(bound.readings(f["server"]), system, hardware_threads=f["hardware_threads"],
                           loadgen_threads=f["threads"], clients=f["clients"])
    assert found.kind == bound.IO and found.evidence.startswith(f"iowait {thresholds.IOWAIT_PCT:.0f} %")


def test_nothing_sampled_says_so():
    assert bound.classify(None, [], hardware_threads=2, loadgen_threads=1, clients=1) == \
        bound.PointBound(bound.NONE, "too few samples to tell")


def test_a_level_s_repeats_share_their_bound_or_say_how_they_split():
    assert bound.of_group([bound.LOCKS, bound.LOCKS, None]) == bound.LOCKS
    assert bound.of_group([bound.MACHINE_CPU, bound.LOCKS, bound.LOCKS]) == \
        f"{bound.LOCKS} 2/3, {bound.MACHINE_CPU} 1/3"
    assert bound.of_group([None, None]) is None


def test_figures_are_wait_shares_and_counters_per_transaction():
    f = _load("pg15-tpcb-scale1-16clients")
    record = f["server"]
    tps = 1000.0
    figures = bound.figures(bound.readings(record), tps)
    waits = {n: sum(v or 0 for v in vs) for n, vs in record["series"].items() if n.startswith("wait.")}
    assert figures["wait.Lock:transactionid"] == pytest.approx(waits["wait.Lock:transactionid"] /
                                                                sum(waits.values()))
    commits = [v for v in record["series"]["xact_commit"] if v is not None]
    assert figures["xact_commit"] == pytest.approx(sum(commits) / len(commits) / tps)
    assert "xact_commit" not in bound.figures(bound.readings(record), None)  # no throughput: no per-transaction figure


def test_the_figure_that_differs_most_between_two_real_points():
    locks = bound.figures(bound.readings(_load("pg15-tpcb-scale1-16clients")["server"]), 1000.0)
    cached = bound.figures(bound.readings(_load("pg15-select-only-scale1-4clients")["server"]), 1000.0)
    name, x, y = bound.differs_most(locks, cached)
    ratios = {n: abs(math.log(max(locks.get(n, 0), 0.01 if n.startswith("wait.") else 0.001)
                              / max(cached.get(n, 0), 0.01 if n.startswith("wait.") else 0.001)))
              for n in set(locks) | set(cached)}
    assert ratios[name] == max(ratios.values()) and (x, y) == (locks.get(name, 0.0), cached.get(name, 0.0))
    assert bound.differs_most({}, {}) is None
