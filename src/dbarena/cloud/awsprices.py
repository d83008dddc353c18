"""A catalogue's AWS prices refreshed from AWS's public bulk price list: the offer
file of one service and region (https://pricing.us-east-1.amazonaws.com/offers/v1.0/
aws/AmazonEC2/current/REGION/index.json; its format:
https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-an-offer.html).

Read from EC2's offer file: compute (an instance type's on-demand hour: Linux, shared
tenancy, no pre-installed software, no licence, capacity status "Used"), storage (an
EBS volume type's GB-month) and iops (a provisioned IOPS-month of gp3, io1 and io2; io2's
first tier, to 32,000 IOPS, the dearest). What a volume includes at no charge is not in
the price list: volumes.py has AWS's rules by type and size. Read from RDS's (AmazonRDS/current/REGION/index.json):
managed (a database instance class's on-demand hour, Single-AZ, by engine: PostgreSQL
and MySQL, no licence), replicas (the Multi-AZ hour less the Single-AZ hour: what the
standby adds), managed_storage (a volume type's Single-AZ GB-month: a Multi-AZ standby
keeps a copy of its own, which the estimate counts twice) and managed_iops (Single-AZ
provisioned IOPS-month). Pure: the offer file's text in, prices out.
"""

from __future__ import annotations

import json
from typing import Any

from dbarena.cloud.catalogue import BY_ENGINE
from dbarena.errors import UsageError

OFFER_URL = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/{service}/current/{region}/index.json"
# What a Linux on-demand instance hour is in the offer file's attributes (BYOL, Windows,
# SQL Server, dedicated hosts and capacity reservations are other products).
_LINUX = {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA",
          "licenseModel": "No License required"}
UNITS = {"Hrs": "hour", "GB-Mo": "GB-month", "IOPS-Mo": "IOPS-month"}
# RDS's engine names (the offer file's databaseEngine) for dbarena's (cloud/aws.py's
# RDS_ENGINES): Aurora, MariaDB, Oracle and SQL Server are other products.
RDS_ENGINES = {"PostgreSQL": "postgres", "MySQL": "mysql"}
# The storage type (CreateDBInstance's StorageType) of RDS's usage types, without the
# region's prefix ("USE2-"; us-east-1 has none): Single-AZ only ("RDS:Multi-AZ-..." are
# the standby's copy, priced as a second copy of these).
RDS_STORAGE = {"RDS:GP3-Storage": "gp3", "RDS:GP2-Storage": "gp2", "RDS:PIOPS-Storage": "io1",
               "RDS:PIOPS-Storage-IO2": "io2", "RDS:StorageUsage": "standard"}
RDS_IOPS = {"RDS:GP3-PIOPS": "gp3", "RDS:PIOPS": "io1", "RDS:IO2-PIOPS": "io2"}
# EBS's provisioned IOPS (product family "System Operation", unit IOPS-Mo) by usage type
# without the region's prefix. io2 is tiered by the IOPS of a volume: ".tier2" (32,001 to
# 64,000) and ".tier3" (beyond) are cheaper than the first tier kept here, which errs on
# the money's side for volumes beyond 32,000 IOPS.
EBS_IOPS = {"EBS:VolumeP-IOPS.gp3": "gp3", "EBS:VolumeP-IOPS.piops": "io1", "EBS:VolumeP-IOPS.io2": "io2"}
# A GB-month is "GB-Mo" in most of EC2's storage prices and "GB-month" in io2's.
GB_MONTH = ("GB-Mo", "GB-month")


def _on_demand(terms: dict[str, Any], sku: str, unit: str | tuple[str, ...], currency: str) -> tuple[float, str] | None:
    """(price, effective date) of a SKU's on-demand term in `unit` (or one of them), or None."""
    units = (unit,) if isinstance(unit, str) else unit
    for term in terms.get(sku, {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            if dimension.get("unit") in units and currency in dimension.get("pricePerUnit", {}):
                return float(dimension["pricePerUnit"][currency]), str(term.get("effectiveDate", ""))[:10]
    return None


def _arch(attributes: dict[str, Any]) -> str:
    return "arm64" if "Graviton" in str(attributes.get("physicalProcessor", "")) else "x86_64"


Entries = dict[str, dict[str, dict[str, Any]]]


def read_offer(text: str, region: str, source: str, currency: str = "USD") -> Entries:
    """The catalogue entries (part -> name -> entry) an EC2 or RDS offer file gives for
    `region` (managed and replicas named ENGINE/CLASS); a one-line UsageError for a
    file that is not one."""
    try:
        offer = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{source}: not an AWS offer file (not JSON: {exc})") from None
    if not isinstance(offer, dict) or offer.get("formatVersion") != "v1.0" \
            or offer.get("offerCode") not in ("AmazonEC2", "AmazonRDS"):
        raise UsageError(f"{source}: not an AWS EC2 or RDS offer file (formatVersion v1.0, offerCode AmazonEC2 "
                         "or AmazonRDS)")
    out = _read_rds(offer, region, source, currency) if offer["offerCode"] == "AmazonRDS" \
        else _read_ec2(offer, region, source, currency)
    if not any(out.values()):
        others = sorted({str(p.get("attributes", {}).get("regionCode")) for p in offer.get("products", {}).values()
                         if isinstance(p, dict) and p.get("attributes", {}).get("regionCode")} - {region})
        if others:  # (a file of another region: its prices are not this one's)
            raise UsageError(f"{source}: no prices for region {region!r} in this offer file (it holds "
                             f"{', '.join(others[:5])}{' ...' if len(others) > 5 else ''}): --region names the file's")
    return out


def _usage(attributes: dict[str, Any]) -> str:
    """The usage type without the region's prefix ("EU-EBS:VolumeP-IOPS.gp3" -> "EBS:...")."""
    usage = str(attributes.get("usagetype", ""))
    for mark in ("RDS:", "EBS:"):
        if mark in usage:
            return usage[usage.find(mark):]
    return usage


def _read_ec2(offer: dict[str, Any], region: str, source: str, currency: str) -> Entries:
    terms = offer.get("terms", {}).get("OnDemand", {})
    version = f"offer file version {offer.get('version')}, published {offer.get('publicationDate')}"
    out: Entries = {"compute": {}, "storage": {}, "iops": {}}
    for sku, product in offer.get("products", {}).items():
        attributes = product.get("attributes", {})
        # The regional offer file holds one region; older files name it by location only
        # (no regionCode): those are taken as the region asked for.
        if attributes.get("regionCode", region) != region:
            continue
        family = product.get("productFamily")
        if family == "Compute Instance" and all(attributes.get(k) == v for k, v in _LINUX.items()) \
                and attributes.get("capacitystatus", "Used") == "Used":
            found = _on_demand(terms, sku, "Hrs", currency)
            if found is not None:
                out["compute"][attributes["instanceType"]] = {
                    "price": found[0], "unit": "hour", "vcpus": int(attributes["vcpu"]), "arch": _arch(attributes),
                    "source": source, "date": found[1], "how": f"on demand, Linux ({version})"}
        elif family == "Storage" and attributes.get("volumeApiName"):
            found = _on_demand(terms, sku, GB_MONTH, currency)
            if found is not None:
                out["storage"][attributes["volumeApiName"]] = {
                    "price": found[0], "unit": "GB-month", "source": source, "date": found[1],
                    "how": f"EBS volume ({version})"}
        elif family == "System Operation" and _usage(attributes) in EBS_IOPS:
            found = _on_demand(terms, sku, "IOPS-Mo", currency)
            kind = EBS_IOPS[_usage(attributes)]
            if found is not None:
                tier = "; io2's first tier (to 32,000 IOPS), the dearest" if kind == "io2" else ""
                out["iops"][kind] = {"price": found[0], "unit": "IOPS-month", "source": source, "date": found[1],
                                     "how": f"EBS provisioned IOPS{tier} ({version})"}
    return out


def _read_rds(offer: dict[str, Any], region: str, source: str, currency: str) -> Entries:
    terms = offer.get("terms", {}).get("OnDemand", {})
    version = f"offer file version {offer.get('version')}, published {offer.get('publicationDate')}"
    out: Entries = {"managed": {}, "replicas": {}, "managed_storage": {}, "managed_iops": {}}
    multi_az: dict[str, tuple[float, str]] = {}  # ENGINE/CLASS -> the Multi-AZ hour, its date
    for sku, product in offer.get("products", {}).items():
        attributes = product.get("attributes", {})
        if attributes.get("regionCode", region) != region or attributes.get("locationType", "AWS Region") != "AWS Region":
            continue  # another region, an Outpost, a Local Zone
        family = product.get("productFamily")
        deployment = attributes.get("deploymentOption")
        usage = _usage(attributes)  # ("USE2-RDS:GP3-Storage" -> "RDS:GP3-Storage")
        if family == "Database Instance" and attributes.get("databaseEngine") in RDS_ENGINES \
                and str(attributes.get("licenseModel", "")).lower() == "no license required" \
                and deployment in ("Single-AZ", "Multi-AZ"):
            found = _on_demand(terms, sku, "Hrs", currency)
            if found is None:
                continue
            name = f"{RDS_ENGINES[attributes['databaseEngine']]}/{attributes['instanceType']}"
            if deployment == "Multi-AZ":
                multi_az[name] = found
            else:
                out["managed"][name] = {"price": found[0], "unit": "hour", "source": source, "date": found[1],
                                        "how": f"on demand, Single-AZ ({version})"}
        elif family == "Database Storage" and deployment == "Single-AZ" and usage in RDS_STORAGE:
            _highest(out["managed_storage"], RDS_STORAGE[usage], _on_demand(terms, sku, "GB-Mo", currency),
                     "GB-month", source, f"RDS storage, Single-AZ ({version})")
        elif family == "Provisioned IOPS" and deployment == "Single-AZ" and usage in RDS_IOPS:
            _highest(out["managed_iops"], RDS_IOPS[usage], _on_demand(terms, sku, "IOPS-Mo", currency), "IOPS-month",
                     source, f"RDS provisioned IOPS, Single-AZ ({version})")
    for name, (price, date) in multi_az.items():
        single = out["managed"].get(name)
        if single is not None:  # (a standby's price is only known beside its primary's)
            out["replicas"][name] = {
                "price": round(price - single["price"], 10), "unit": "hour", "source": source, "date": date,
                "how": f"on demand, the Multi-AZ hour {price:g} less the Single-AZ hour {single['price']:g} ({version})"}
    return out


def _highest(table: dict[str, dict[str, Any]], name: str, found: tuple[float, str] | None, unit: str, source: str,
             how: str) -> None:
    """Put a storage or IOPS price in; RDS lists one per engine: where two engines'
    differ, the higher is kept (an estimate errs on the side of the money) and says so."""
    if found is None:
        return
    old = table.get(name)
    if old is not None and old["price"] != found[0]:
        how += "; the highest of the engines' prices"
    if old is None or found[0] >= old["price"]:
        table[name] = {"price": found[0], "unit": unit, "source": source, "date": found[1], "how": how}
    else:
        old["how"] = how


def refresh(catalogue: dict[str, Any], region: str, entries: Entries) -> list[str]:
    """Put the entries into a catalogue's AWS region (made if new), over what it had;
    what changed, a line each. Managed and replica prices (ENGINE/CLASS) go under
    their engine, as the catalogue keeps them."""
    aws = catalogue.setdefault("providers", {}).setdefault("aws", {})
    place = aws.setdefault("regions", {}).setdefault(region, {})
    changed = []
    for part, table in entries.items():
        for name, entry in sorted(table.items()):
            where = place.setdefault(part, {})
            key = name
            if part in BY_ENGINE:
                engine, key = name.split("/", 1)
                where = where.setdefault(engine, {})
            old = where.get(key)
            if old is None or any(old.get(k) != entry[k] for k in ("price", "date", "source")):
                was = "new" if old is None else f"was {old.get('price')} ({old.get('date') or 'undated'})"
                changed.append(f"{part} {name}: {entry['price']:g} per {entry['unit']} of {entry['date']} ({was})")
            where[key] = entry
    return changed
