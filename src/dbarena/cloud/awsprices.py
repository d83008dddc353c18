"""A catalogue's AWS prices refreshed from AWS's public bulk price list: the offer
file of one service and region (https://pricing.us-east-1.amazonaws.com/offers/v1.0/
aws/AmazonEC2/current/REGION/index.json; its format:
https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-an-offer.html).

Read from EC2's offer file: compute (an instance type's on-demand hour: Linux, shared
tenancy, no pre-installed software, no licence, capacity status "Used") and storage
(an EBS volume type's GB-month). RDS's prices are not read from its offer file yet:
they stay as the catalogue has them. Pure: the offer file's text in, prices out.
"""

from __future__ import annotations

import json
from typing import Any

from dbarena.errors import UsageError

OFFER_URL = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/{service}/current/{region}/index.json"
# What a Linux on-demand instance hour is in the offer file's attributes (BYOL, Windows,
# SQL Server, dedicated hosts and capacity reservations are other products).
_LINUX = {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA",
          "licenseModel": "No License required"}
UNITS = {"Hrs": "hour", "GB-Mo": "GB-month"}


def _on_demand(terms: dict[str, Any], sku: str, unit: str, currency: str) -> tuple[float, str] | None:
    """(price, effective date) of a SKU's on-demand term in `unit`, or None."""
    for term in terms.get(sku, {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            if dimension.get("unit") == unit and currency in dimension.get("pricePerUnit", {}):
                return float(dimension["pricePerUnit"][currency]), str(term.get("effectiveDate", ""))[:10]
    return None


def _arch(attributes: dict[str, Any]) -> str:
    return "arm64" if "Graviton" in str(attributes.get("physicalProcessor", "")) else "x86_64"


def read_offer(text: str, region: str, source: str, currency: str = "USD") -> dict[str, dict[str, dict[str, Any]]]:
    """The catalogue entries ("compute", "storage" -> name -> entry) an EC2 offer file
    gives for `region`; a one-line UsageError for a file that is not one."""
    try:
        offer = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{source}: not an AWS offer file (not JSON: {exc})") from None
    if not isinstance(offer, dict) or offer.get("formatVersion") != "v1.0" or offer.get("offerCode") != "AmazonEC2":
        raise UsageError(f"{source}: not an AWS EC2 offer file (formatVersion v1.0, offerCode AmazonEC2)")
    terms = offer.get("terms", {}).get("OnDemand", {})
    version = f"offer file version {offer.get('version')}, published {offer.get('publicationDate')}"
    out: dict[str, dict[str, dict[str, Any]]] = {"compute": {}, "storage": {}}
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
            found = _on_demand(terms, sku, "GB-Mo", currency)
            if found is not None:
                out["storage"][attributes["volumeApiName"]] = {
                    "price": found[0], "unit": "GB-month", "source": source, "date": found[1],
                    "how": f"EBS volume ({version})"}
    return out


def refresh(catalogue: dict[str, Any], region: str, entries: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Put the entries into a catalogue's AWS region (made if new), over what it had;
    what changed, a line each."""
    aws = catalogue.setdefault("providers", {}).setdefault("aws", {})
    place = aws.setdefault("regions", {}).setdefault(region, {})
    changed = []
    for part, table in entries.items():
        for name, entry in sorted(table.items()):
            old = place.setdefault(part, {}).get(name)
            if old is None or any(old.get(k) != entry[k] for k in ("price", "date", "source")):
                was = "new" if old is None else f"was {old.get('price')} ({old.get('date') or 'undated'})"
                changed.append(f"{part} {name}: {entry['price']:g} per {entry['unit']} of {entry['date']} ({was})")
            place[part][name] = entry
    return changed
