"""Machines on demand (docs/cloud.md): a study's [machines] priced from a versioned
catalogue, checked against a cost guard, made through a provider (AWS through
Ansible's amazon.aws collection), run on as a fleet, and deleted: every resource
tagged with its run, owner and expiry, so that `dbarena cloud reap` finds what a
killed controller left."""
