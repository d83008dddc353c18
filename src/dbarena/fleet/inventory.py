"""An Ansible inventory, read by Ansible itself (`ansible-inventory --list`), and what
dbarena takes from each host's variables: its label, its price, its working directory.

    [fleet]
    c7g  ansible_host=10.0.0.5  dbarena_price_per_hour=0.58
    m6i  ansible_host=10.0.0.6  dbarena_price_per_month=420  dbarena_currency=EUR

A host's working directory is dbarena_workdir if given, else
<dbarena_workdir_base>/<inventory name> (base default ~/.dbarena-fleet, in the login
user's home on the host): two inventory hosts that are one machine (two addresses, two
ports) never share one, so neither their stores nor their run locks collide. The
default is in the home rather than in a world-writable directory such as /var/tmp,
where another local user could create the directory first (and with it the programs
the playbooks run); every playbook checks the directory on the host before it runs
anything there (playbooks/workdir_check.py). dbarena's dependencies are installed once
per host, in dbarena_deps_dir (default <dbarena_workdir_base>/.deps, which no working
directory can be: their names never start with a dot), shared by its working
directories (playbooks/venv_install.py).

Everything is checked before anything starts: a bad inventory, `--limit` or host
variable is one line and exit status 2.
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from dbarena.records import JSON, JSONObject, json_object
from dbarena.errors import UsageError
from dbarena.stats.price import HOURS_PER_MONTH

DEFAULT_WORKDIR_BASE = "~/.dbarena-fleet"
DEPS = ".deps"  # under the working directories' base: the dependencies they share
# The group whose one host runs a --together run's throwaway server (the others drive it).
SERVER_GROUP = "server"


@dataclass(frozen=True)
class Host:
    name: str              # the inventory's name for it
    label: str             # what its results are stored under (dbarena_label, default the name)
    price_per_hour: float | None
    price_per_month: float | None  # as given (price_per_hour is then it / 730)
    currency: str | None
    workdir: str           # where dbarena lives and works on the host
    groups: tuple[str, ...] = ()  # the inventory groups it is in (SERVER_GROUP: --together's server)
    address: str = ""      # where other hosts reach it: dbarena_server_address, else ansible_host, else its name
    deps: str = f"{DEFAULT_WORKDIR_BASE}/{DEPS}"  # the dependencies its working directories share


def _number(host: str, name: str, value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise UsageError(f"inventory: host {host}: {name}={value!r} is not a number") from None
    if not number > 0:
        raise UsageError(f"inventory: host {host}: {name}={value!r} must be positive")
    return number


def host_of(name: str, variables: JSONObject) -> Host:
    per_hour, per_month = variables.get("dbarena_price_per_hour"), variables.get("dbarena_price_per_month")
    if per_hour is not None and per_month is not None:
        raise UsageError(f"inventory: host {name}: give dbarena_price_per_hour or dbarena_price_per_month, not both")
    price = monthly = None
    if per_hour is not None:
        price = _number(name, "dbarena_price_per_hour", per_hour)
    elif per_month is not None:
        monthly = _number(name, "dbarena_price_per_month", per_month)
        price = monthly / HOURS_PER_MONTH
    currency = variables.get("dbarena_currency")
    if currency is not None and not (isinstance(currency, str) and currency.strip()):
        raise UsageError(f"inventory: host {name}: dbarena_currency={currency!r} is not a currency name")
    label = variables.get("dbarena_label", name)
    if not isinstance(label, str) or not label.strip():
        raise UsageError(f"inventory: host {name}: dbarena_label={label!r} is not a label")
    base = _host_path(name, "dbarena_workdir_base", variables.get("dbarena_workdir_base", DEFAULT_WORKDIR_BASE))
    if "dbarena_workdir" in variables:
        workdir = _host_path(name, "dbarena_workdir", variables["dbarena_workdir"])
    else:
        workdir = default_workdir(name, base)
    deps = _host_path(name, "dbarena_deps_dir", variables["dbarena_deps_dir"]) if "dbarena_deps_dir" in variables \
        else f"{base.rstrip('/')}/{DEPS}"
    address = variables.get("dbarena_server_address", variables.get("ansible_host", name))
    if not isinstance(address, str) or not address.strip() or any(c.isspace() for c in address.strip()):
        raise UsageError(f"inventory: host {name}: dbarena_server_address={address!r} is not an address")
    return Host(name=name, label=label.strip(), price_per_hour=price, address=address.strip(),
                price_per_month=monthly, currency=(currency or "USD").strip() if price is not None else None,
                workdir=workdir, deps=deps)


def _host_path(host: str, name: str, value: object) -> str:
    """An absolute path on the host, or one in the login user's home there (~ or ~/...:
    expanded on the host, where the home is known)."""
    if not isinstance(value, str) or not (value.startswith("/") or value == "~" or value.startswith("~/")):
        raise UsageError(f"inventory: host {host}: {name}={value!r} must be an absolute path or one under ~/ "
                         "(the login user's home on the host)")
    if ".." in value.split("/"):
        raise UsageError(f"inventory: host {host}: {name}={value!r} may not hold '..'")
    return value


def default_workdir(name: str, base: str = DEFAULT_WORKDIR_BASE) -> str:
    """<base>/<inventory name>, the name made safe as one path component (an inventory
    name may hold characters such as ':' or '/' that a directory name should not)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "host"
    return f"{base.rstrip('/') or ''}/{safe}"


def _names(value: JSON) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def read(listing: JSONObject, limit: str | None) -> list[Host]:
    """The hosts of an `ansible-inventory --list` listing that `limit` selects (names,
    groups or shell-style patterns, comma-separated), checked."""
    hostvars = json_object(json_object(listing.get("_meta")).get("hostvars"))
    groups = {name: body for name, body in listing.items() if name != "_meta" and isinstance(body, dict)}

    def members(group: str, seen: set[str]) -> list[str]:
        if group in seen:
            return []
        seen.add(group)
        body = groups.get(group, {})
        out = _names(body.get("hosts"))
        for child in _names(body.get("children")):
            out.extend(members(child, seen))
        return out

    every = sorted(set(members("all", set())) | set(hostvars))
    if not every:
        raise UsageError("inventory: no hosts")
    chosen: list[str] = []
    for pattern in ([p.strip() for p in limit.split(",") if p.strip()] if limit else ["all"]):
        found = members(pattern, set()) if pattern in groups else \
            [h for h in every if fnmatch.fnmatchcase(h, pattern)]
        if not found:
            raise UsageError(f"--limit {pattern!r}: no such host or group in the inventory "
                             f"(hosts: {', '.join(every)})")
        chosen.extend(h for h in found if h not in chosen)
    hosts = [replace(host_of(name, json_object(hostvars.get(name))),
                     groups=tuple(sorted(g for g in groups if g != "all" and name in members(g, set()))))
             for name in chosen]
    by_label: dict[str, str] = {}
    for h in hosts:
        if h.label in by_label:
            raise UsageError(f"inventory: hosts {by_label[h.label]} and {h.name} share the label {h.label!r}: "
                             "their results could not be told apart; give one a dbarena_label")
        by_label[h.label] = h.name
    return hosts


def load(path: Path, limit: str | None, ansible_inventory: str) -> list[Host]:
    """Parse the inventory with Ansible (so that every format and plug-in it knows works)."""
    if not path.is_file():
        raise UsageError(f"-i {path}: no such inventory file")
    done = subprocess.run([ansible_inventory, "-i", str(path), "--list"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    problem = next((line for line in done.stderr.splitlines() if "ERROR" in line or "WARNING" in line
                    and "parse" in line.lower()), None)
    if done.returncode != 0 or problem:
        detail = (problem or done.stderr.strip().splitlines()[-1:] or ["ansible-inventory failed"])
        raise UsageError(f"-i {path}: the inventory does not parse: "
                         f"{(detail if isinstance(detail, str) else detail[0]).strip()}")
    try:
        listing = json.loads(done.stdout)
    except ValueError:
        listing = None
    if not isinstance(listing, dict):
        raise UsageError(f"-i {path}: ansible-inventory printed no inventory")
    return read(listing, limit)
