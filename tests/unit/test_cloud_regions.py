"""A [machines] study in another region than us-east-1, priced from a catalogue that
`dbarena cloud prices --refresh-from` made from that region's EC2 offer file; the
included IOPS of gp3, io1 and io2 by size (cloud/volumes.py); the prices' age in
`study check`. The eu-west-1 and ap-northeast-1 offer files here are hand-made in the
offer file's format with round, made-up prices dated 2001-01-01
(tests/fixtures/aws-prices/README.md): figures a reader checks by hand, not AWS's."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import invoke
from dbarena import study as study_mod
from dbarena.cli import cli
from dbarena.cloud import awsprices, catalogue, estimate, volumes
from dbarena.errors import UsageError

FIXTURES = Path(__file__).parent.parent / "fixtures" / "aws-prices"

STUDY = """
schema = 1
name = "regional"
[sweep]
levels = [1]
duration_s = 600
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
[machines]
provider = "aws"
region = "{region}"
instance_types = ["m7g.large", "m7i.large"]
disk_gb = 73
disk_iops = 4000
catalogue = "prices.json"
"""


def _refreshed(tmp_path: Path, region: str) -> Path:
    out = tmp_path / "prices.json"
    result = CliRunner().invoke(cli, ["cloud", "prices", "--region", region,
                                      "--refresh-from", str(FIXTURES / f"ec2-{region}-handmade.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("region, m7g, m7i, gp3, iops", [("eu-west-1", 0.1, 0.2, 0.1, 0.01),
                                                          ("ap-northeast-1", 0.3, 0.4, 0.2, 0.02)])
def test_study_check_prices_a_machines_study_in_the_region(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           region: str, m7g: float, m7i: float, gp3: float,
                                                           iops: float) -> None:
    _refreshed(tmp_path, region)
    path = tmp_path / "s.toml"
    path.write_text(STUDY.format(region=region))
    code, out, err = invoke(["study", "check", str(path)], capsys)
    assert code == 0, out + err
    assert f"machines: aws {region}" in out
    assert f"compute m7g.large: {m7g:g} USD/hour x 1" in out and f"compute m7i.large: {m7i:g} USD/hour x 1" in out
    # 1,000 IOPS above the 3,000 that an EBS gp3 volume includes at every size, billed.
    assert f"iops gp3: {iops:g} USD/IOPS-month x 1000" in out and "EBS gp3: 3,000 IOPS and 125 MiB/s included" in out
    assert "[undated]" not in out and "prices as of 2001-01-01 (the oldest date of those used)" in out
    # The total, by hand: each host's billed seconds at its compute, 73 GB and 1,000 IOPS (per 730 h).
    s = study_mod.load(str(path))
    assert s.machines is not None
    est = estimate.estimate(s, catalogue.for_machines(s.machines, s.source))
    by_hand = sum(billed / 3600 * (hourly + 73 * gp3 / 730 + 1000 * iops / 730)
                  for billed, hourly in ((est.lines[0].billed_s, m7g), (est.lines[3].billed_s, m7i)))
    assert est.total == pytest.approx(by_hand)
    assert by_hand < 1 and f"estimated cost: {by_hand:.4f} USD" in out  # (a total under 1 shows 4 places)


def test_a_region_the_catalogue_lacks_is_said_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _refreshed(tmp_path, "eu-west-1")
    path = tmp_path / "s.toml"
    path.write_text(STUDY.format(region="eu-central-1"))
    code, out, err = invoke(["study", "check", str(path)], capsys)
    assert code != 0
    line = [x for x in err.splitlines() if "no aws prices" in x]
    assert len(line) == 1 and "region 'eu-central-1' (it has: us-east-1, eu-west-1)" in line[0]


def test_a_price_the_region_lacks_is_named_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _refreshed(tmp_path, "eu-west-1")
    path = tmp_path / "s.toml"
    path.write_text(STUDY.format(region="eu-west-1").replace('"m7i.large"]', '"c7g.4xlarge"]').replace(
        'levels = [1]', 'levels = [1, 2]'))
    code, out, err = invoke(["study", "check", str(path)], capsys)
    assert code == 0, out + err
    assert out.count("estimated cost: unknown (no price for compute c7g.4xlarge)") == 1


def test_an_offer_file_of_another_region_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = invoke(["cloud", "prices", "--region", "ap-northeast-1", "--refresh-from",
                             str(FIXTURES / "ec2-eu-west-1-handmade.json"), "-o", str(tmp_path / "p.json")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "no prices for region 'ap-northeast-1' in this offer file (it holds eu-west-1)" in err
    assert not (tmp_path / "p.json").exists()


def test_ec2_and_rds_offer_files_refresh_together(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    result = CliRunner().invoke(cli, ["cloud", "prices", "--refresh-from", str(FIXTURES / "ec2-us-east-1-m5-excerpt.json"),
                                      "--refresh-from", str(FIXTURES / "rds-us-east-1-handmade.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "compute m5.large: 0.096 per hour of 2020-07-01" in result.output
    assert "managed postgres/db.m7g.large: 0.168 per hour of 2024-11-01" in result.output


def test_ebs_iops_are_read_with_the_region_prefix() -> None:
    entries = awsprices.read_offer((FIXTURES / "ec2-ap-northeast-1-handmade.json").read_text(), "ap-northeast-1", "f")
    assert {k: (v["price"], v["unit"], v["date"]) for k, v in entries["iops"].items()} == {
        "gp3": (0.02, "IOPS-month", "2001-01-01")}
    assert entries["compute"]["m7g.large"]["arch"] == "arm64" and entries["compute"]["m7i.large"]["arch"] == "x86_64"


@pytest.mark.parametrize("part, storage, size, iops, mibs, provisionable", [
    ("iops", "gp3", 20, 3000, 125, True), ("iops", "gp3", 2000, 3000, 125, True),
    ("managed_iops", "gp3", 399, 3000, 125, False), ("managed_iops", "gp3", 400, 12000, 500, True),
    ("managed_iops", "io1", 100, 0, 0, True), ("iops", "io2", 100, 0, 0, True)])
def test_included_iops_by_type_and_size(part: str, storage: str, size: int, iops: int, mibs: int,
                                        provisionable: bool) -> None:
    rule = volumes.included(part, storage, size)
    assert rule is not None and (rule.iops, rule.throughput_mibs, rule.provisionable) == (iops, mibs, provisionable)
    assert rule.source.startswith("https://docs.aws.amazon.com/")
    assert volumes.included("iops", "gp2", 100) is None


MANAGED = """
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
[[machines.managed]]
engine = "postgres"
instance_class = "db.m7g.large"
storage_type = "gp3"
storage_gb = {gb}
iops = {iops}
"""


def test_rds_gp3_includes_12000_iops_from_400_gib() -> None:
    s = study_mod.parse(MANAGED.format(gb=500, iops=15000), "s.toml")
    assert s.machines is not None
    lines = [line for line in estimate.estimate(s, catalogue.for_machines(s.machines, s.source)).lines
             if line.part == "managed_iops"]
    assert [(line.quantity, line.note) for line in lines] == [
        (3000, "RDS gp3 from 400 GiB: 12,000 IOPS and 500 MiB/s included")]
    s = study_mod.parse(MANAGED.format(gb=500, iops=12000), "s.toml")
    assert s.machines is not None
    est = estimate.estimate(s, catalogue.for_machines(s.machines, s.source))
    assert not [line for line in est.lines if line.part == "managed_iops"]


def test_rds_gp3_below_400_gib_cannot_have_more_iops() -> None:
    s = study_mod.parse(MANAGED.format(gb=100, iops=5000), "s.toml")
    assert s.machines is not None
    with pytest.raises(UsageError) as caught:
        estimate.estimate(s, catalogue.for_machines(s.machines, s.source))
    message = str(caught.value)
    assert message.startswith("s.toml: machines.managed (postgres).iops: 5,000 IOPS on 100 GB: RDS gp3 below 400 GiB")
    assert "\n" not in message and "ask for 400 GB or more, or io1/io2" in message


def test_the_age_is_the_oldest_date_of_the_prices_used(tmp_path: Path) -> None:
    _refreshed(tmp_path, "eu-west-1")
    path = tmp_path / "s.toml"
    path.write_text(STUDY.format(region="eu-west-1"))
    s = study_mod.load(str(path))
    assert s.machines is not None
    est = estimate.estimate(s, catalogue.for_machines(s.machines, s.source))
    assert est.oldest_date == "2001-01-01" and est.as_json()["oldest_price_date"] == "2001-01-01"
    lines = estimate.describe(est, today=date(2001, 1, 31))
    assert "  prices as of 2001-01-01 (the oldest date of those used), 30 days before 2001-01-31; " \
           "`dbarena cloud prices --refresh-from` reads newer ones" in lines
