"""`dbarena cloud`: a study's [machines] made, deleted and reaped (docs/cloud.md), and
the price catalogue."""

from __future__ import annotations

import json
from pathlib import Path

import click

from dbarena import inbound
from dbarena.cli.app import cli, max_cost_option, max_instances_option
from dbarena.errors import UsageError
from dbarena.limits import MAX_CATALOGUE_BYTES, MAX_OFFER_BYTES


@cli.group("cloud")
def cloud_group() -> None:
    """Machines on demand: a study's [machines] made, deleted and reaped (docs/cloud.md)."""


@cloud_group.command("up")
@click.argument("study_name", metavar="FILE|NAME")
@max_cost_option
@max_instances_option
def cloud_up(study_name: str, max_cost: float | None, max_instances: int | None) -> None:
    """Create a study's [machines] (after its estimate and the cost guard), tagged with
    the run, its owner and an expiry; print the run, the inventory `fleet run` takes and
    each managed database's --target and the private file holding its password. They stay until `dbarena cloud down RUN` (or
    `cloud reap` once expired)."""
    from dbarena import study as study_mod
    from dbarena.cloud import machines

    the_study = study_mod.load(study_name)
    estimated, cat = machines.checked_estimate(the_study, max_cost, max_instances)
    assert the_study.machines is not None
    machines.reap_orphans(click.echo)
    provider = machines.provider_for(the_study.machines.provider, the_study.machines.region)
    made = machines.up(the_study, provider, estimated, cat, click.echo, kept=True)
    for r in made.resources:
        click.echo(f"made {r.line()} at {r.address}")
    click.echo(f"run {made.run}: inventory {made.inventory}")
    for engine, url in made.targets.items():
        click.echo(f"target of {engine}: {url}")
    for engine, path in made.secrets.items():
        # The password stays in the file (only its owner reads it); the clients read it there.
        how = f"PGPASSFILE={path}" if engine == "postgres" else f"--defaults-extra-file={path}"
        click.echo(f"password of {engine}'s master user: in {path} (private; {how})")
    click.echo(f"delete them with: dbarena cloud down {made.run}")


@cloud_group.command("down")
@click.argument("run")
def cloud_down(run: str) -> None:
    """Delete everything a run of this installation made (found by its tags, so also what a creation cut short
    made)."""
    from dbarena.cloud import machines

    n = machines.down(run, click.echo)
    click.echo(f"run {run}: {n} resource(s) deleted")


@cloud_group.command("reap")
@click.option("--provider", default="aws", show_default=True, help="The provider to look in.")
@click.option("--region", help="The region to look in (required but for --provider local: this machine).")
@click.option("--yes", is_flag=True, help="Delete what is listed [default: list only].")
def cloud_reap(provider: str, region: str | None, yes: bool) -> None:
    """List what this installation made (its dbarena-owner-id tag, with a valid expiry)
    that is expired, or whose run this state directory no longer has; with --yes, delete
    them. Nothing else is touched, whoever made it. What killed controllers of this
    installation made is deleted first, without asking (their records say so)."""
    from dbarena.cloud import machines

    if region is None and provider != "local":
        raise UsageError("cloud reap: --region is required (the region to look in)")
    machines.reap_orphans(click.echo)
    machines.reap(machines.provider_for(provider, region or "local"), yes, click.echo)


@cloud_group.command("prices")
@click.option("--provider", default="aws", show_default=True, help="The provider whose prices to show.")
@click.option("--region", default="us-east-1", show_default=True, help="The region whose prices to show or refresh.")
@click.option("--catalogue", "catalogue_path", type=click.Path(dir_okay=False, path_type=Path),
              help="A catalogue file [default: the bundled one].")
@click.option("--refresh-from", "offers", metavar="FILE|URL", multiple=True,
              help="AWS's EC2 or RDS offer file for the region (its bulk price list, e.g. "
                   "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/eu-west-1/index.json, "
                   "or .../AmazonRDS/current/eu-west-1/index.json): EC2's on-demand Linux instance, EBS storage and "
                   "provisioned IOPS prices, or RDS's on-demand PostgreSQL and MySQL instance (Single-AZ, Multi-AZ "
                   "standby), storage and IOPS prices, replace the catalogue's for --region, with their dates. "
                   "Repeatable: EC2's and RDS's together. A file of another region is refused.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="With --refresh-from: write the refreshed catalogue here (a study names it in machines.catalogue).")
def cloud_prices(provider: str, region: str, catalogue_path: Path | None, offers: tuple[str, ...],
                 output: Path | None) -> None:
    """Show the price catalogue's prices for a region, each with its source and date;
    or refresh them from the provider's public price list."""
    from dbarena.atomic import write_text
    from dbarena.cloud import awsprices, catalogue

    text = inbound.read_text(catalogue_path, MAX_CATALOGUE_BYTES, "--catalogue") if catalogue_path \
        else catalogue.bundled_text()
    origin = str(catalogue_path) if catalogue_path else "bundled catalogue"
    if offers:
        if provider != "aws":
            raise UsageError("--refresh-from reads AWS's price list: --provider aws")
        if output is None:
            raise UsageError("--refresh-from needs --output FILE (the bundled catalogue is not written)")
        data = json.loads(text)
        changed = []
        for offer in offers:  # (one file's error leaves nothing written)
            changed += awsprices.refresh(data, region, awsprices.read_offer(_offer_text(offer), region, offer))
        for line in changed or ["nothing changed"]:
            click.echo(line)
        write_text(output, json.dumps(data, indent=1))
        click.echo(f"catalogue written to {output}")
        return
    cat = catalogue.read(text, origin, provider, region)
    click.echo(f"{provider} {region} ({origin}), {cat.currency}")
    for part, billing in cat.billing.items():
        click.echo(f"  billing of {part}: per {billing.increment_s} s, at least {billing.minimum_s} s ({billing.how})")
    for (part, name), price in sorted(cat.prices.items()):
        click.echo(f"  {part} {name}: {price.amount:g} per {price.unit} [{price.date or 'undated'}] {price.source}")


def _offer_text(offer: str) -> str:
    if offer.startswith(("https://", "http://")):
        import urllib.request

        try:
            with urllib.request.urlopen(offer, timeout=300) as answer:  # noqa: S310 (the user's own URL)
                data: bytes = answer.read(MAX_OFFER_BYTES + 1)  # (an answer without end is not held whole)
        except OSError as exc:
            raise UsageError(f"{offer}: cannot read it: {exc}") from None
        if len(data) > MAX_OFFER_BYTES:
            raise UsageError(f"{offer}: more than {MAX_OFFER_BYTES:,} bytes, beyond any offer file")
        try:
            return data.decode()
        except UnicodeDecodeError as exc:
            raise UsageError(f"{offer}: not UTF-8 text (byte {exc.start:,})") from None
    return inbound.read_text(Path(offer), MAX_OFFER_BYTES, "--refresh-from")
