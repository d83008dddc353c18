"""What a study's [machines] would cost: each resource, for how long, at which price,
with the provider's billing granularity applied; and the cost guard (`--max-cost`),
before anything is made and, from the resources' creation times, while they run.

The time of a host is its plan's machine time (run.preflight.machine_s over the
plan expanded for that host's vCPUs, as the fleet runs the whole study on every host)
plus SETUP_S; a managed database lives as long as the longest host. Pure: a study and
a catalogue in, records out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, timezone
from typing import Any, Mapping

from dbarena.cloud import volumes
from dbarena.cloud.catalogue import ZERO_HOW, Catalogue, Price
from dbarena.errors import UsageError
from dbarena.run import plan as plan_mod
from dbarena.run.preflight import machine_s, search_of
from dbarena.study.model import EngineEntry, Study

# An allowance for what a fresh host does before its first point and after its last:
# boot, the fleet's packages and dbarena's wheel, the store fetched back, deletion.
# Not a measurement (no cloud was reachable where this was written): a round figure
# that errs long, so that the estimate and the guard err on the side of the money.
SETUP_S = 900
# A managed database takes this long to become available and to be deleted (RDS:
# typically 5 to 15 minutes each way; billed from creation): an allowance as above.
MANAGED_SETUP_S = 1800


@dataclass(frozen=True)
class Line:
    """One priced part of one resource: a host's instance, its volume, a database's
    standby ..."""

    resource: str  # "m7g.large-1", "postgres (managed)"
    part: str  # catalogue.PARTS
    name: str  # what of that part: "m7g.large", "gp3"
    quantity: float  # instances, GB or IOPS
    seconds: float  # how long it is expected to exist
    billed_s: int  # the seconds billed for it (granularity applied)
    price: Price | None  # None: the catalogue has no price for it
    note: str = ""  # what the quantity leaves out ("EBS gp3: 3,000 IOPS ... included")

    @property
    def per_hour(self) -> float | None:
        return None if self.price is None else self.price.per_hour * self.quantity

    @property
    def cost(self) -> float | None:
        return None if self.per_hour is None else self.per_hour * self.billed_s / 3600

    def spent(self, seconds: float, billed: int) -> float:
        """What it has cost after `seconds` of existence (`billed`: those seconds billed)."""
        return 0.0 if self.per_hour is None or seconds <= 0 else self.per_hour * billed / 3600

    def as_json(self) -> dict[str, Any]:
        return {"resource": self.resource, "part": self.part, "name": self.name, "quantity": self.quantity,
                "seconds": round(self.seconds), "billed_s": self.billed_s, "per_hour": self.per_hour,
                "cost": self.cost, "unit": self.price.unit if self.price else None,
                "price": self.price.amount if self.price else None,
                "source": self.price.provenance if self.price else None, "note": self.note or None}


@dataclass(frozen=True)
class CostEstimate:
    provider: str
    region: str
    currency: str
    lines: tuple[Line, ...]
    host_s: Mapping[str, float]  # host name -> seconds it is expected to exist
    catalogue: str  # where the prices come from

    @property
    def missing(self) -> list[str]:
        return sorted({f"{line.part} {line.name}" for line in self.lines if line.price is None})

    @property
    def total(self) -> float | None:
        """The whole cost, or None when a price is missing (no total is better than a low one)."""
        costs = [line.cost for line in self.lines]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)

    @property
    def oldest_date(self) -> str | None:
        """The catalogue's age as this estimate sees it: the oldest date of the prices
        it uses (the study's own prices and zeros have none), or None."""
        dates = [line.price.date for line in self.lines if line.price and line.price.date]
        return min(dates) if dates else None

    @property
    def longest_s(self) -> float:
        return max(self.host_s.values(), default=0.0)

    @property
    def resources(self) -> list[str]:
        return list(dict.fromkeys(line.resource for line in self.lines))

    def as_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "region": self.region, "currency": self.currency,
                "catalogue": self.catalogue, "hosts": {k: round(v) for k, v in self.host_s.items()},
                "lines": [line.as_json() for line in self.lines], "total": self.total, "missing": self.missing,
                "oldest_price_date": self.oldest_date}


def managed_engines(study: Study) -> set[str]:
    return {m.engine for m in study.machines.managed} if study.machines else set()


def host_seconds(study: Study, vcpus: int | None) -> float:
    """The machine time of the study on a host of `vcpus` (what "N%" levels are a share
    of), plus SETUP_S. A managed database's engine: levels are a share of its
    server_threads, as for a --target."""
    managed = managed_engines(study)

    def threads(engine: EngineEntry) -> int | None:
        if engine.name in managed or engine.target is not None:
            return engine.server_threads
        return vcpus

    try:
        plans = plan_mod.expand(study, threads)
    except UsageError as exc:
        raise UsageError(f"{study.source}: [machines]: {exc}") from None
    # --slo's search after the closed-loop points, at its most (max_rates a point): a
    # cost guard that counted the typical search would let a long one slip under it.
    search = search_of(study, plans)
    return sum(machine_s(p.points) for p in plans) + (search.max_seconds if search else 0.0) + SETUP_S


def estimate(study: Study, catalogue: Catalogue) -> CostEstimate:
    """Every resource the study's [machines] makes, for how long and at what cost."""
    machines = study.machines
    if machines is None:
        raise UsageError(f"{study.source}: no [machines]: nothing to create")
    lines: list[Line] = []
    host_s: dict[str, float] = {}
    by_type: dict[str, float] = {}
    for host, instance_type in machines.hosts:
        compute = catalogue.price("compute", instance_type)
        if instance_type not in by_type:
            if compute is None or compute.vcpus is None:
                vcpus = None
                if any(isinstance(level, str) for w in study.workloads for level in w.levels):
                    raise UsageError(f"{study.source}: machines.instance_types: the catalogue does not say how many "
                                     f"vCPUs a {instance_type} has, which levels as shares (\"20%\") need: give "
                                     f"levels as numbers, or a catalogue that has it")
            else:
                vcpus = compute.vcpus
            by_type[instance_type] = host_seconds(study, vcpus)
        seconds = host_s[host] = by_type[instance_type]
        lines.append(_line(catalogue, host, "compute", instance_type, 1, seconds))
        lines.append(_line(catalogue, host, "storage", machines.disk, machines.disk_gb, seconds))
        lines += _iops(catalogue, host, "iops", machines.disk, machines.disk_gb, machines.disk_iops, seconds,
                       where=f"{study.source}: machines.disk_iops")
    longest = max(host_s.values(), default=0.0)
    for m in machines.managed:
        seconds = longest + MANAGED_SETUP_S
        resource = f"{m.engine} (managed)"
        copies = 2 if m.ha else 1  # a standby keeps a copy of the storage of its own
        lines.append(_line(catalogue, resource, "managed", f"{m.engine}/{m.instance_class}", 1, seconds))
        if m.ha:
            lines.append(_line(catalogue, resource, "replicas", f"{m.engine}/{m.instance_class}", 1, seconds))
        lines.append(_line(catalogue, resource, "managed_storage", m.storage_type, m.storage_gb * copies, seconds))
        lines += _iops(catalogue, resource, "managed_iops", m.storage_type, m.storage_gb, m.iops, seconds,
                       where=f"{study.source}: machines.managed ({m.engine}).iops", copies=copies)
    return CostEstimate(provider=machines.provider, region=machines.region, currency=catalogue.currency,
                        lines=tuple(lines), host_s=host_s, catalogue=catalogue.origin)


def _line(catalogue: Catalogue, resource: str, part: str, name: str, quantity: float, seconds: float) -> Line:
    return Line(resource=resource, part=part, name=name, quantity=quantity, seconds=seconds,
                billed_s=catalogue.billing_of(part).billed_s(seconds), price=catalogue.price(part, name))


def _iops(catalogue: Catalogue, resource: str, part: str, storage: str, size_gb: float, iops: int | None,
          seconds: float, where: str, copies: int = 1) -> list[Line]:
    """Provisioned IOPS beyond what the storage type includes at that size (volumes.py:
    EBS gp3 3,000; RDS gp3 3,000 below 400 GiB, 12,000 from it; io1 and io2 none; else
    the catalogue's `included`): none asked, none billed. IOPS that the type cannot
    have at that size are refused in one line (the provider would refuse them)."""
    if iops is None:
        return []
    price = catalogue.price(part, storage)
    rule = volumes.included(part, storage, size_gb) if catalogue.provider == "aws" else None
    if rule is not None and not rule.provisionable and iops > rule.iops:
        raise UsageError(f"{where}: {iops:,} IOPS on {size_gb:g} GB: {rule.why} ({rule.source}); "
                         f"ask for {volumes.RDS_GP3_THRESHOLD_GB} GB or more, or io1/io2")
    included = rule.iops if rule is not None else (price.included if price else 0)
    billable = max(0, iops - included) * copies
    note = rule.why if rule is not None else (f"{included:,} IOPS included" if included else "")
    return [replace(_line(catalogue, resource, part, storage, billable, seconds), note=note)] if billable else []


# The cost guard.

def check_max_cost(estimated: CostEstimate, max_cost: float | None) -> None:
    """Refuse, in one line and before anything is made, an estimate beyond `max_cost`,
    or one that cannot be totalled (a price missing) when a maximum is given."""
    if max_cost is None:
        return
    if not math.isfinite(max_cost) or max_cost <= 0:
        # (The command line refuses these first; a caller of this module must not get
        # a guard that nothing is over either.)
        raise UsageError(f"--max-cost {max_cost!r}: the budget must be a finite amount above 0")
    total = estimated.total
    if total is None:
        raise UsageError(f"--max-cost {max_cost:g}: no price for {', '.join(estimated.missing)} in "
                         f"{estimated.catalogue}, so no total to hold against it: give it in [machines.prices]")
    if total > max_cost:
        raise UsageError(f"estimated {total:,.2f} {estimated.currency} is over --max-cost {max_cost:g} "
                         f"{estimated.currency}: nothing was created (`dbarena study check` itemises it)")


def check_max_instances(estimated: CostEstimate, max_instances: int | None) -> None:
    if max_instances is None:
        return
    made = len(estimated.resources)
    if made > max_instances:
        raise UsageError(f"{made} instances and databases to create, over --max-instances {max_instances}: "
                         f"nothing was created")


def spent(estimated: CostEstimate, created: Mapping[str, datetime], now: datetime,
          catalogue: Catalogue) -> float:
    """What the resources made so far have cost at `now`: each line's price for the
    time since its resource was created, with the billing granularity applied (a
    resource not made yet costs nothing; a price missing counts as nothing)."""
    total = 0.0
    for line in estimated.lines:
        when = created.get(line.resource)
        if when is None:
            continue
        seconds = (now - when).total_seconds()
        total += line.spent(seconds, catalogue.billing_of(line.part).billed_s(seconds))
    return total


def over_budget(estimated: CostEstimate, created: Mapping[str, datetime], now: datetime, catalogue: Catalogue,
                max_cost: float | None) -> str | None:
    """The one line that stops a run whose spend so far has reached `max_cost` (None: go on)."""
    if max_cost is None:
        return None
    so_far = spent(estimated, created, now, catalogue)
    if so_far < max_cost:
        return None
    return (f"spent about {so_far:,.2f} {estimated.currency} so far, at --max-cost {max_cost:g}: "
            f"stopping the run and deleting what it made")


def would_pass(estimated: CostEstimate, created: Mapping[str, datetime], now: datetime, catalogue: Catalogue,
               max_cost: float | None, ahead_s: float) -> str | None:
    """The one line that stops a run whose spend would reach `max_cost` within
    `ahead_s` (until the next check, and the deletion after it), or None: so that a
    run stops before it passes its budget, not after."""
    if max_cost is None:
        return None
    later = spent(estimated, created, now + timedelta(seconds=ahead_s), catalogue)
    if later < max_cost:
        return None
    so_far = spent(estimated, created, now, catalogue)
    return (f"spent about {so_far:,.2f} {estimated.currency} so far, {later:,.2f} within {ahead_s:.0f} s (the next "
            f"check and the deletion): at --max-cost {max_cost:g}: stopping the run and deleting what it made")


def _money(amount: float | None, currency: str) -> str:
    if amount is None:
        return "no price"
    return f"{amount:,.2f} {currency}" if amount >= 1 or amount == 0 else f"{amount:.4f} {currency}"


def _age(day: str, today: date | None) -> str:
    try:
        then = date.fromisoformat(day)
    except ValueError:
        return ""  # (a catalogue's date that is not a day is shown as it is, without an age)
    now = today or datetime.now(timezone.utc).date()
    return f", {(now - then).days:,} days before {now.isoformat()}"


def describe(estimated: CostEstimate, today: date | None = None) -> list[str]:
    """What `study check` prints of [machines]: each resource, how long, what it costs,
    and the age of the prices (the oldest date among those used, `today` [default:
    today, UTC] the age is counted to)."""
    from dbarena.run.studycheck import duration

    c = estimated.currency
    lines = [f"machines: {estimated.provider} {estimated.region}, created for the run and deleted after it "
             f"(prices: {estimated.catalogue})"]
    for resource in estimated.resources:
        parts = [line for line in estimated.lines if line.resource == resource]
        seconds = parts[0].seconds
        lines.append(f"  {resource}: ~{duration(seconds)}")
        for line in parts:
            price = line.price
            rate = "no price in the catalogue" if price is None else (
                f"{price.amount:g} {c}/{price.unit} x {line.quantity:g}, billed {duration(line.billed_s)} "
                f"-> {_money(line.cost, c)} [{price.date or 'undated'}]")
            lines.append(f"    {line.part} {line.name}: {rate}" + (f" ({line.note})" if line.note else ""))
    sources = sorted({line.price.source for line in estimated.lines if line.price})
    lines += [f"  price source: {source}" for source in sources]
    oldest = estimated.oldest_date
    if oldest is not None:
        lines.append(f"  prices as of {oldest} (the oldest date of those used){_age(oldest, today)}; "
                     "`dbarena cloud prices --refresh-from` reads newer ones")
    total = estimated.total
    lines.append(f"estimated cost: {_money(total, c)}" if total is not None
                 else f"estimated cost: unknown (no price for {', '.join(estimated.missing)})")
    zero = sorted({f"{line.part} {line.name}" for line in estimated.lines
                   if line.price and line.price.how == ZERO_HOW})
    if zero:
        lines.append(f"  counted as zero (this machine; no price given in [machines.prices]): {', '.join(zero)}")
    undated = sorted({f"{line.part} {line.name}" for line in estimated.lines
                      if line.price and not line.price.date and line.price.how != ZERO_HOW})
    if undated:
        lines.append(f"  undated prices (entered by hand, not read from a price list): {', '.join(undated)}; "
                     "`dbarena cloud prices --refresh-from` reads the provider's")
    return lines
