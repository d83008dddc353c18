"""The catalogue refreshed from AWS's bulk price list (cloud/awsprices.py), on real
excerpts of it saved as fixtures (tests/fixtures/aws-prices/README.md); nothing is
fetched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dbarena.cli import cli
from dbarena.cloud import awsprices, catalogue
from dbarena.errors import UsageError

FIXTURES = Path(__file__).parent.parent / "fixtures" / "aws-prices"


def test_linux_on_demand_hour_and_ebs_storage_are_read() -> None:
    text = (FIXTURES / "ec2-us-east-1-m5-excerpt.json").read_text()
    entries = awsprices.read_offer(text, "us-east-1", "offer.json")
    m5 = entries["compute"]["m5.large"]
    # The on-demand term's 0.096, not the reserved term's 0.06 beside it.
    assert (m5["price"], m5["unit"], m5["vcpus"], m5["arch"], m5["date"]) == (0.096, "hour", 2, "x86_64",
                                                                             "2020-07-01")
    assert "20200709223013" in m5["how"]
    assert entries["storage"] == {}


def test_what_is_not_a_linux_on_demand_price_is_left_out() -> None:
    text = (FIXTURES / "ec2-us-east-2-excerpt.json").read_text()
    entries = awsprices.read_offer(text, "us-east-2", "offer.json")
    # m5.large has only a reserved term in this excerpt; p3.8xlarge is Windows BYOL.
    assert entries["compute"] == {}
    gp3 = entries["storage"]["gp3"]
    assert (gp3["price"], gp3["unit"], gp3["date"]) == (0.08, "GB-month", "2023-03-01")
    # Another region's file: refused in one line, naming the region it holds.
    with pytest.raises(UsageError, match=r"no prices for region 'us-east-1' in this offer file \(it holds us-east-2\)"):
        awsprices.read_offer(text, "us-east-1", "offer.json")


@pytest.mark.parametrize("text, message", [("{", "not JSON"), ('{"formatVersion": "v1.0", "offerCode": "AmazonS3"}',
                                                              "not an AWS EC2 or RDS offer file")])
def test_other_files_are_refused(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        awsprices.read_offer(text, "us-east-1", "x.json")


def test_refresh_replaces_hand_entered_prices_with_dated_ones(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    result = CliRunner().invoke(cli, ["cloud", "prices", "--refresh-from", str(FIXTURES / "ec2-us-east-1-m5-excerpt.json"),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "compute m5.large: 0.096 per hour of 2020-07-01" in result.output
    cat = catalogue.read(out.read_text(), str(out), "aws", "us-east-1")
    m5 = cat.price("compute", "m5.large")
    assert m5 is not None and m5.date == "2020-07-01" and m5.source.endswith("ec2-us-east-1-m5-excerpt.json")
    arm = cat.price("compute", "m7g.large")  # not in the excerpt: as the bundled catalogue had it
    assert arm is not None and arm.date is None
    bundled = json.loads(catalogue.bundled_text())
    assert out.read_text() != catalogue.bundled_text() and bundled["catalogue"] == 1


def test_prices_are_shown_with_source_and_date() -> None:
    result = CliRunner().invoke(cli, ["cloud", "prices"])
    assert result.exit_code == 0, result.output
    assert "billing of compute: per 1 s, at least 60 s" in result.output
    assert "compute m5.large: 0.096 per hour [2020-07-01]" in result.output
    assert "[undated]" in result.output


RDS = FIXTURES / "rds-us-east-1-handmade.json"  # hand-made in the offer file's format (README.md)


def test_rds_instance_storage_and_iops_prices_are_read() -> None:
    entries = awsprices.read_offer(RDS.read_text(), "us-east-1", "rds.json")
    # Single-AZ on-demand hours by engine; not the reserved 0.11, not the readable
    # standbys' cluster, not Oracle's BYOL.
    assert {k: v["price"] for k, v in entries["managed"].items()} == {
        "postgres/db.m7g.large": 0.168, "mysql/db.m7g.large": 0.168, "postgres/db.t4g.micro": 0.016}
    pg = entries["managed"]["postgres/db.m7g.large"]
    assert (pg["unit"], pg["date"], pg["source"]) == ("hour", "2024-11-01", "rds.json")
    assert "Single-AZ" in pg["how"] and "20241101000000" in pg["how"]
    # The standby: the Multi-AZ hour (0.336) less the Single-AZ one; none where the
    # file has no Multi-AZ hour (db.t4g.micro).
    assert {k: v["price"] for k, v in entries["replicas"].items()} == {
        "postgres/db.m7g.large": 0.168, "mysql/db.m7g.large": 0.168}
    assert "Multi-AZ hour 0.336 less the Single-AZ hour 0.168" in entries["replicas"]["postgres/db.m7g.large"]["how"]
    # Storage and IOPS: Single-AZ (the Multi-AZ 0.23 and 0.20 are the standby's copy).
    assert {k: (v["price"], v["unit"]) for k, v in entries["managed_storage"].items()} == {
        "gp3": (0.115, "GB-month"), "io1": (0.125, "GB-month")}
    # (What gp3 includes is not in the price list: volumes.py's rules by size.)
    assert {k: (v["price"], v["unit"], "included" in v) for k, v in entries["managed_iops"].items()} == {
        "io1": (0.1, "IOPS-month", False), "gp3": (0.02, "IOPS-month", False)}
    with pytest.raises(UsageError, match="no prices for region 'eu-west-1'"):  # another region's file
        awsprices.read_offer(RDS.read_text(), "eu-west-1", "rds.json")


def test_rds_refresh_then_the_estimate_prices_a_managed_target_with_source_and_date(tmp_path: Path) -> None:
    from dbarena import study as study_mod
    from dbarena.cloud import estimate

    out = tmp_path / "prices.json"
    result = CliRunner().invoke(cli, ["cloud", "prices", "--refresh-from", str(RDS), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "managed postgres/db.m7g.large: 0.168 per hour of 2024-11-01 (was 0.168 (undated))" in result.output
    assert "replicas mysql/db.m7g.large: 0.168 per hour of 2024-11-01" in result.output
    cat = catalogue.read(out.read_text(), str(out), "aws", "us-east-1")
    assert cat.price("compute", "m7g.large") is not None  # EC2's entries kept
    study = study_mod.parse(f"""
schema = 1
name = "rds"
[sweep]
levels = [1]
duration_s = 60
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
[machines]
provider = "aws"
region = "us-east-1"
instance_types = ["m7g.large"]
catalogue = "{out}"
[[machines.managed]]
engine = "postgres"
instance_class = "db.m7g.large"
storage_gb = 100
storage_type = "io1"
iops = 2000
ha = true
""", str(tmp_path / "s.toml"))
    assert study.machines is not None
    estimated = estimate.estimate(study, catalogue.for_machines(study.machines, study.source))
    lines = {line.part: line for line in estimated.lines if line.resource == "postgres (managed)"}
    assert sorted(lines) == ["managed", "managed_iops", "managed_storage", "replicas"]
    for line in lines.values():
        assert line.price is not None and line.price.date == "2024-11-01" and line.price.source == str(RDS)
    # Compute, the standby, both copies of the storage, both copies' IOPS: apart.
    assert (lines["managed"].per_hour, lines["replicas"].per_hour) == (0.168, 0.168)
    assert lines["managed_storage"].quantity == 200 and lines["managed_iops"].quantity == 4000
    assert lines["managed_storage"].per_hour == pytest.approx(200 * 0.125 / 730)
    assert lines["managed_iops"].per_hour == pytest.approx(4000 * 0.10 / 730)
