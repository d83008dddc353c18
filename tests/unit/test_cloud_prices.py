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
    assert awsprices.read_offer(text, "us-east-1", "offer.json") == {"compute": {}, "storage": {}}  # other region


@pytest.mark.parametrize("text, message", [("{", "not JSON"), ('{"formatVersion": "v1.0", "offerCode": "AmazonRDS"}',
                                                              "not an AWS EC2 offer file")])
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
