"""The price catalogue: what each resource costs, with the source and date of every
price, and how each provider bills time (its granularity).

A catalogue is a JSON file (the bundled one is prices.json in this package; a study
may name another, written by `dbarena cloud prices --refresh-from`). Prices are kept
apart by part: compute (an instance hour), storage (a GB-month), IOPS (an
IOPS-month, above what the storage class includes), managed (a database instance
hour), replicas (a standby's hour), managed_storage and managed_iops. A month is
stats.price.HOURS_PER_MONTH hours, as the providers prorate it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from dbarena import inbound
from dbarena.errors import UsageError
from dbarena.limits import MAX_CATALOGUE_BYTES
from dbarena.stats.price import HOURS_PER_MONTH
from dbarena.study.model import Machines

CATALOGUE_VERSION = 1
PARTS = ("compute", "storage", "iops", "managed", "replicas", "managed_storage", "managed_iops")
# The parts keyed by engine first (a managed database's class costs what its engine costs).
BY_ENGINE = ("managed", "replicas")
# Which billing rule each part follows.
BILLING_OF = {"compute": "compute", "storage": "storage", "iops": "storage", "managed": "managed",
              "replicas": "managed", "managed_storage": "managed", "managed_iops": "managed"}
UNITS = {"hour": 1.0, "GB-month": 1 / HOURS_PER_MONTH, "IOPS-month": 1 / HOURS_PER_MONTH}
# The local provider (cloud/local.py) bills nothing: a price the study does not give
# is zero, and says so wherever it is shown.
LOCAL_SOURCE = "local provider"
ZERO_HOW = "this machine: no price given in [machines.prices], counted as zero"


@dataclass(frozen=True)
class Billing:
    """How a provider rounds time: each started `increment_s` counts whole, and a
    resource is billed at least `minimum_s` (AWS: per second, 60 s at least)."""

    increment_s: int
    minimum_s: int
    source: str = ""
    how: str = ""

    def billed_s(self, seconds: float) -> int:
        """The seconds billed for `seconds` of use (0 for none)."""
        if seconds <= 0:
            return 0
        steps = math.ceil(seconds / self.increment_s - 1e-9)  # (a float's 3600.0000001 is still one hour)
        return max(self.minimum_s, steps * self.increment_s)


@dataclass(frozen=True)
class Price:
    part: str  # one of PARTS
    name: str  # "m7g.large", "gp3", "postgres/db.m7g.large"
    amount: float  # in the catalogue's currency per `unit`
    unit: str  # "hour", "GB-month", "IOPS-month"
    source: str  # where it comes from: a price list's URL, or the study file
    date: str | None  # the price list's effective date; None: entered by hand, unverified
    how: str = ""
    vcpus: int | None = None  # compute: what "N%" levels are a share of on the host
    arch: str | None = None
    included: int = 0  # iops: what the storage class includes at no charge

    @property
    def per_hour(self) -> float:
        """The amount per hour of one unit (one GB, one IOPS, one instance)."""
        return self.amount * UNITS[self.unit]

    @property
    def provenance(self) -> str:
        return f"{self.source}, {self.date}" if self.date else f"{self.source}, {self.how or 'undated'}"


@dataclass(frozen=True)
class Catalogue:
    provider: str
    region: str
    currency: str
    billing: Mapping[str, Billing]
    prices: Mapping[tuple[str, str], Price] = field(default_factory=dict)
    origin: str = "bundled catalogue"

    def price(self, part: str, name: str) -> Price | None:
        return self.prices.get((part, name))

    def billing_of(self, part: str) -> Billing:
        return self.billing[BILLING_OF[part]]


def bundled_text() -> str:
    return (resources.files("dbarena.cloud") / "prices.json").read_text()


def read(text: str, origin: str, provider: str, region: str) -> Catalogue:
    """The catalogue's prices for one provider and region; a one-line UsageError for a
    file that is not one, or a provider or region it does not hold."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{origin}: not a price catalogue (not JSON: {exc})") from None
    if not isinstance(raw, dict) or raw.get("catalogue") != CATALOGUE_VERSION:
        raise UsageError(f"{origin}: not a price catalogue of version {CATALOGUE_VERSION}")
    providers = raw.get("providers", {})
    if provider not in providers:
        raise UsageError(f"{origin}: no prices for provider {provider!r} (it has: {', '.join(providers) or 'none'})")
    body = providers[provider]
    regions = body.get("regions", {})
    if region not in regions:
        raise UsageError(f"{origin}: no {provider} prices for region {region!r} "
                         f"(it has: {', '.join(regions) or 'none'}); give them in [machines.prices]")
    try:
        billing = {k: Billing(int(v["increment_s"]), int(v["minimum_s"]), str(v.get("source", "")),
                              str(v.get("how", ""))) for k, v in body["billing"].items()}
        prices: dict[tuple[str, str], Price] = {}
        for part, table in regions[region].items():
            if part not in PARTS:
                raise UsageError(f"{origin}: unknown part {part!r} (known: {', '.join(PARTS)})")
            for key, entry in _entries(part, table):
                prices[(part, key)] = _price(part, key, entry)
        for part in BILLING_OF.values():
            if part not in billing:
                raise UsageError(f"{origin}: {provider} has no billing rule for {part}")
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{origin}: a malformed entry ({type(exc).__name__}: {exc})") from None
    return Catalogue(provider=provider, region=region, currency=str(body["currency"]), billing=billing,
                     prices=prices, origin=origin)


def _entries(part: str, table: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    if part in BY_ENGINE:
        return [(f"{engine}/{name}", entry) for engine, classes in table.items() for name, entry in classes.items()]
    return list(table.items())


def _price(part: str, name: str, entry: Mapping[str, Any]) -> Price:
    unit = str(entry["unit"])
    if unit not in UNITS:
        raise ValueError(f"{part} {name}: unit {unit!r} is not one of {', '.join(UNITS)}")
    amount = float(entry["price"])
    if not math.isfinite(amount) or amount < 0:
        raise ValueError(f"{part} {name}: price {amount!r}")
    return Price(part=part, name=name, amount=amount, unit=unit, source=str(entry["source"]),
                 date=entry.get("date"), how=str(entry.get("how", "")),
                 vcpus=int(entry["vcpus"]) if entry.get("vcpus") is not None else None,
                 arch=entry.get("arch"), included=int(entry.get("included", 0)))


def local(machines: Machines) -> Catalogue:
    """The local provider's catalogue: every instance and disk at zero (the study's own
    prices go over it), billed per second with no minimum; each instance type has this
    machine's CPUs (what "N%" levels are a share of: every local instance is it)."""
    billing = {part: Billing(1, 0, LOCAL_SOURCE, "this machine: the study's own prices, per second")
               for part in set(BILLING_OF.values())}
    prices = {("compute", t): Price(part="compute", name=t, amount=0.0, unit="hour", source=LOCAL_SOURCE, date=None,
                                    how=ZERO_HOW, vcpus=os.cpu_count())
              for t in machines.instance_types}
    prices[("storage", machines.disk)] = Price(part="storage", name=machines.disk, amount=0.0, unit="GB-month",
                                               source=LOCAL_SOURCE, date=None, how=ZERO_HOW)
    return Catalogue(provider="local", region=machines.region, currency=machines.currency or "USD", billing=billing,
                     prices=prices, origin="local provider (the study's own prices, else zero)")


def for_machines(machines: Machines, study_source: str) -> Catalogue:
    """The catalogue a study's [machines] is priced with: its `catalogue` file or the
    bundled one (the local provider's: zeros), with the study's own [machines.prices]
    over it."""
    if machines.provider == "local" and machines.catalogue is None:
        return overridden(local(machines), machines, study_source)
    if machines.catalogue is not None:
        path = Path(machines.catalogue)
        try:
            text = inbound.read_text(path, MAX_CATALOGUE_BYTES)
        except inbound.Unreadable as exc:
            raise UsageError(f"{study_source}: machines.catalogue: {exc}") from None
        catalogue = read(text, str(path), machines.provider, machines.region)
    else:
        catalogue = read(bundled_text(), "bundled catalogue", machines.provider, machines.region)
    return overridden(catalogue, machines, study_source)


def overridden(catalogue: Catalogue, machines: Machines, study_source: str) -> Catalogue:
    """The study's prices over the catalogue's. A managed or replica price names the
    class ("db.m7g.large"): it is the price for every engine. A price of another
    currency than the catalogue's is refused: they would be added together."""
    if machines.prices and machines.currency is not None and machines.currency != catalogue.currency:
        raise UsageError(f"{study_source}: machines.prices.currency {machines.currency} is not the catalogue's "
                         f"{catalogue.currency} ({catalogue.origin}): every price of an estimate is in one currency")
    prices = dict(catalogue.prices)
    units = {"compute": "hour", "storage": "GB-month", "iops": "IOPS-month", "managed": "hour", "replicas": "hour",
             "managed_storage": "GB-month", "managed_iops": "IOPS-month"}
    for (part, name), amount in machines.prices:
        keys = [k for k in prices if k[0] == part and k[1].split("/")[-1] == name] if part in BY_ENGINE else []
        if part in BY_ENGINE and not keys:
            keys = [(part, f"{m.engine}/{name}") for m in machines.managed]
        for key in keys or [(part, name)]:
            old = prices.get(key)
            prices[key] = Price(part=part, name=key[1], amount=amount, unit=units[part], source=study_source,
                                date=None, how="the study's own price", vcpus=old.vcpus if old else None,
                                arch=old.arch if old else None, included=old.included if old else 0)
    return replace(catalogue, prices=prices)
