"""Results exchanged between people (docs/exchange.md): `dbarena publish` writes a
store's runs as one bundle file, `dbarena verify` checks one, `dbarena import BUNDLE`
stores one's runs.

bundle.py (the format: a deterministic tar of a manifest, its SSH signature, SHA256SUMS
and each point's files), sshsig.py (SSH signatures with Ed25519 keys, made and checked
with the cryptography library; allowed-signers files), publish.py (runs -> bundle,
secrets masked and checked absent), verify.py (bundle -> every check, every figure
recomputed; the bundle as rows of a throwaway store), importing.py (verify, then merge
those rows into a store with their provenance).
"""
