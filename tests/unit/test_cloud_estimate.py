"""A study's [machines]: read and checked, priced from the catalogue with the billing
granularity applied, and the cost guard before and during a run (dbarena.cloud)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from dbarena import study as study_mod
from dbarena.cloud import catalogue, estimate
from dbarena.cloud.catalogue import Billing
from dbarena.errors import UsageError
from dbarena.run.preflight import machine_s
from dbarena.run import plan as plan_mod

BASE = """
schema = 1
name = "graviton"
[sweep]
levels = [1, "100%"]
duration_s = 300
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
"""

MACHINES = """
[machines]
provider = "aws"
region = "us-east-1"
instance_types = ["m7g.large", "m7i.large"]
disk_gb = 50
"""


def parse(text: str) -> study_mod.Study:
    return study_mod.parse(text, "s.toml")


def test_machines_are_read() -> None:
    s = parse(BASE + MACHINES + 'image = "ami-0123"\ncount = 2\n')
    m = s.machines
    assert m is not None
    assert m.instance_types == ("m7g.large", "m7i.large")
    assert m.hosts == (("m7g.large-1", "m7g.large"), ("m7g.large-2", "m7g.large"),
                       ("m7i.large-1", "m7i.large"), ("m7i.large-2", "m7i.large"))
    assert m.image == "ami-0123" and m.disk == "gp3" and m.disk_gb == 50
    assert parse(BASE).machines is None


@pytest.mark.parametrize("extra, message", [
    ('[machines]\nregion = "us-east-1"\ninstance_types = ["m7g.large"]\n', "machines.provider: missing"),
    (MACHINES + "colour = 1\n", "machines.colour: unknown key"),
    ('[machines]\nprovider = "aws"\nregion = "us-east-1"\n', "nothing to make"),
    (MACHINES + "count = 0\n", "machines.count: must be at least 1"),
    ('[machines]\nprovider = "aws"\nregion = "r"\ninstance_types = ["a", "a"]\n', "listed twice"),
    (MACHINES + '[[machines.managed]]\nengine = "mysql"\ninstance_class = "db.m7g.large"\n',
     "'mysql' is not an engine of this study"),
    (MACHINES + '[[machines.managed]]\nengine = "postgres"\n', "instance_class: missing"),
    (MACHINES + '[[machines.managed]]\nengine = "postgres"\ninstance_class = "x"\nha = "yes"\n', "ha: expected true"),
    (MACHINES + '[machines.prices]\ncompute."m7g.large" = -1\n', "expected a price of 0 or more"),
    (MACHINES + '[machines.prices]\nwidgets.x = 1\n', "machines.prices.widgets: unknown key"),
    ('[machines]\nprovider = "aws"\nregion = "r"\n[[machines.managed]]\nengine = "postgres"\ninstance_class = "x"\n',
     "needs a host to load it from"),
])
def test_machines_errors_are_one_line(extra: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse(BASE + extra)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value) and str(caught.value).startswith("s.toml: ")


def test_managed_target_engine_must_be_free() -> None:
    text = BASE.replace("[engines.postgres]", '[engines.postgres]\ntarget = "postgresql://u@h/db"') + MACHINES + \
        '[[machines.managed]]\nengine = "postgres"\ninstance_class = "db.m7g.large"\n'
    with pytest.raises(UsageError, match="has a target already"):
        parse(text)


@pytest.mark.parametrize("seconds, increment, minimum, billed", [
    (0, 1, 60, 0),          # nothing used, nothing billed
    (1, 1, 60, 60),         # AWS: per second, at least a minute
    (59.2, 1, 60, 60),
    (60.2, 1, 60, 61),      # a started second counts whole
    (3601, 3600, 3600, 7200),  # per hour: a started hour counts whole
    (10, 3600, 3600, 3600),
    (3600.0000001, 3600, 3600, 3600),  # float noise is not a second hour
    (300, 1, 600, 600),     # RDS: ten minutes at least
])
def test_billing_granularity(seconds: float, increment: int, minimum: int, billed: int) -> None:
    assert Billing(increment, minimum).billed_s(seconds) == billed


def test_bundled_catalogue_has_sources_and_billing() -> None:
    cat = catalogue.read(catalogue.bundled_text(), "bundled", "aws", "us-east-1")
    assert cat.currency == "USD"
    assert cat.billing["compute"] == Billing(1, 60, cat.billing["compute"].source, cat.billing["compute"].how)
    assert cat.billing["managed"].minimum_s == 600
    for price in cat.prices.values():
        assert price.source.startswith("https://"), price
        assert price.date or "unverified" in price.how, price  # undated prices say so
    assert {p for p, _ in cat.prices} == set(catalogue.PARTS)
    arm = cat.price("compute", "m7g.large")
    assert arm is not None and arm.vcpus == 2 and arm.arch == "arm64"


@pytest.mark.parametrize("provider, region, message", [
    ("gcp", "us-east-1", "no prices for provider 'gcp'"), ("aws", "mars-1", "no aws prices for region 'mars-1'")])
def test_catalogue_refuses_what_it_does_not_hold(provider: str, region: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        catalogue.read(catalogue.bundled_text(), "bundled", provider, region)


def test_catalogue_refuses_malformed_files() -> None:
    with pytest.raises(UsageError, match="not JSON"):
        catalogue.read("{", "f.json", "aws", "r")
    with pytest.raises(UsageError, match="not a price catalogue of version 1"):
        catalogue.read('{"catalogue": 7}', "f.json", "aws", "r")


def _catalogue_file(tmp_path: Path, compute: float = 1.0, increment: int = 3600) -> Path:
    """A catalogue of round prices, billed per hour: figures a reader checks by hand."""
    entry = {"source": "test", "date": "2026-01-01"}
    data = {"catalogue": 1, "providers": {"aws": {"currency": "EUR", "billing": {
        k: {"increment_s": increment, "minimum_s": increment} for k in ("compute", "storage", "managed")},
        "regions": {"r": {
            "compute": {"a.large": {"price": compute, "unit": "hour", "vcpus": 4, **entry},
                        "b.large": {"price": 2 * compute, "unit": "hour", "vcpus": 8, **entry}},
            "storage": {"gp3": {"price": 73.0, "unit": "GB-month", **entry}},  # 0.1 per GB-hour
            "iops": {"gp3": {"price": 0.73, "unit": "IOPS-month", "included": 3000, **entry}},
            "managed": {"postgres": {"db.x": {"price": 3.0, "unit": "hour", **entry}}},
            "replicas": {"postgres": {"db.x": {"price": 3.0, "unit": "hour", **entry}}},
            "managed_storage": {"gp3": {"price": 730.0, "unit": "GB-month", **entry}},  # 1 per GB-hour
        }}}}}
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(data))
    return path


def _study(tmp_path: Path, machines: str, base: str = BASE) -> study_mod.Study:
    _catalogue_file(tmp_path)
    path = tmp_path / "s.toml"
    path.write_text(base + machines.replace("[machines]\n", '[machines]\ncatalogue = "prices.json"\n', 1))
    return study_mod.load(str(path))


HOSTS = '[machines]\nprovider = "aws"\nregion = "r"\ninstance_types = ["a.large", "b.large"]\ndisk_gb = 10\n'


def test_estimate_per_host_from_its_own_plan(tmp_path: Path) -> None:
    s = _study(tmp_path, HOSTS)
    assert s.machines is not None
    cat = catalogue.for_machines(s.machines, s.source)
    est = estimate.estimate(s, cat)
    # "100%" is 4 threads on a.large, 8 on b.large: each host's own plan, timed as preflight times it.
    for host, vcpus in (("a.large-1", 4), ("b.large-1", 8)):
        plans = plan_mod.expand(s, lambda e: vcpus)
        assert est.host_s[host] == pytest.approx(sum(machine_s(p.points) for p in plans) + estimate.SETUP_S)
        assert [p.threads for p in plans[0].points] == [1, vcpus]
    # Per hour, a started hour counts whole: each host ~25 min -> one hour billed.
    assert all(line.billed_s == 3600 for line in est.lines)
    costs = {(line.resource, line.part): line.cost for line in est.lines}
    assert costs == {("a.large-1", "compute"): pytest.approx(1.0), ("a.large-1", "storage"): pytest.approx(1.0),
                     ("b.large-1", "compute"): pytest.approx(2.0), ("b.large-1", "storage"): pytest.approx(1.0)}
    assert est.total == pytest.approx(5.0) and est.currency == "EUR"


def test_estimate_managed_with_ha_iops_and_overrides(tmp_path: Path) -> None:
    machines = HOSTS.replace('["a.large", "b.large"]', '["a.large"]') + "disk_iops = 4000\n" + \
        '[machines.prices]\ncompute."a.large" = 10\n' + \
        '[[machines.managed]]\nengine = "postgres"\ninstance_class = "db.x"\nstorage_gb = 2\nha = true\n'
    # A managed database's "100%" is a share of its server_threads, as a --target's.
    s = _study(tmp_path, machines, BASE.replace("[engines.postgres]", "[engines.postgres]\nserver_threads = 2"))
    assert s.machines is not None
    est = estimate.estimate(s, catalogue.for_machines(s.machines, s.source))
    costs = {(line.resource, line.part): line.cost for line in est.lines}
    assert costs[("a.large-1", "compute")] == pytest.approx(10.0)  # the study's price over the catalogue's
    assert costs[("a.large-1", "iops")] == pytest.approx(1000 * 0.001)  # only what gp3 does not include
    # The database lives as long as the longest host plus its own set-up: 25 + 30 min -> one hour.
    assert costs[("postgres (managed)", "managed")] == pytest.approx(3.0)
    assert costs[("postgres (managed)", "replicas")] == pytest.approx(3.0)  # HA: the standby apart
    assert costs[("postgres (managed)", "managed_storage")] == pytest.approx(2 * 2 * 1.0)  # a copy each
    assert est.total == pytest.approx(sum(c for c in costs.values() if c is not None))
    compute = next(line for line in est.lines if line.part == "compute")
    assert compute.price is not None and compute.price.source == s.source and compute.price.vcpus == 4


def test_missing_price_means_no_total(tmp_path: Path) -> None:
    s = _study(tmp_path, HOSTS.replace('"b.large"]', '"b.large"]\ndisk = "io9"'))
    assert s.machines is not None
    est = estimate.estimate(s, catalogue.for_machines(s.machines, s.source))
    assert est.total is None and est.missing == ["storage io9"]
    with pytest.raises(UsageError, match="no price for storage io9"):
        estimate.check_max_cost(est, 100)
    estimate.check_max_cost(est, None)  # no guard asked: the estimate is shown as it is


def test_max_cost_and_max_instances_refuse_before_anything(tmp_path: Path) -> None:
    s = _study(tmp_path, HOSTS)
    assert s.machines is not None
    est = estimate.estimate(s, catalogue.for_machines(s.machines, s.source))
    estimate.check_max_cost(est, 5.0)
    with pytest.raises(UsageError) as caught:
        estimate.check_max_cost(est, 4.99)
    assert "estimated 5.00 EUR is over --max-cost 4.99 EUR: nothing was created" in str(caught.value)
    estimate.check_max_instances(est, 2)
    with pytest.raises(UsageError, match="2 instances and databases to create, over --max-instances 1"):
        estimate.check_max_instances(est, 1)


def test_spend_so_far_stops_an_overrun(tmp_path: Path) -> None:
    s = _study(tmp_path, HOSTS)
    assert s.machines is not None
    cat = catalogue.for_machines(s.machines, s.source)
    est = estimate.estimate(s, cat)
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    created = {"a.large-1": t0, "b.large-1": t0 + timedelta(hours=1)}
    # Per hour: a.large's first hour (compute 1 + disk 1) is owed from its first second.
    assert estimate.spent(est, created, t0 + timedelta(seconds=1), cat) == pytest.approx(2.0)
    # 90 min in: a.large 2 hours (4.0), b.large's first hour (2 + 1).
    assert estimate.spent(est, created, t0 + timedelta(minutes=90), cat) == pytest.approx(7.0)
    assert estimate.over_budget(est, created, t0 + timedelta(minutes=90), cat, 7.5) is None
    stop = estimate.over_budget(est, created, t0 + timedelta(minutes=90), cat, 6.0)
    assert stop is not None and "spent about 7.00 EUR so far, at --max-cost 6" in stop
    assert estimate.over_budget(est, created, t0 + timedelta(days=9), cat, None) is None


def test_unknown_vcpus_with_shares_is_refused(tmp_path: Path) -> None:
    s = _study(tmp_path, HOSTS.replace('"b.large"]', '"z.large"]') + '[machines.prices]\ncompute."z.large" = 1\n')
    assert s.machines is not None
    with pytest.raises(UsageError, match="does not say how many vCPUs a z.large has"):
        estimate.estimate(s, catalogue.for_machines(s.machines, s.source))


def test_study_currency_must_match_the_catalogue(tmp_path: Path) -> None:
    s = _study(tmp_path, HOSTS + '[machines.prices]\ncurrency = "USD"\ncompute."a.large" = 1\n')
    assert s.machines is not None
    with pytest.raises(UsageError, match="machines.prices.currency USD is not the catalogue's EUR"):
        catalogue.for_machines(s.machines, s.source)
