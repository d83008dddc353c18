"""The commands that exchange results (docs/exchange.md): `publish` and `verify`
(`import BUNDLE` is `import`'s, in results.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dbarena import atomic
from dbarena.cli.app import cli, open_store, store_option
from dbarena.errors import ExitStatus, UsageError
from dbarena.limits import MAX_COUNT, printable

if TYPE_CHECKING:
    from dbarena.exchange.sshsig import Signer


def _say(text: str, err: bool = False) -> None:
    click.echo(printable(text), err=err)


def _signer(key: Path) -> tuple[Signer, str | None]:
    """The key, and an encrypted key's passphrase: from DBARENA_KEY_PASSPHRASE, else
    asked on the terminal (never an argument: every user of the machine sees those)."""
    from dbarena.exchange import publish, sshsig

    try:
        return sshsig.load_key(key, None), None
    except sshsig.SignatureProblem as exc:
        if "is encrypted" not in str(exc):
            raise
    passphrase = os.environ.get(publish.PASSPHRASE_ENV)
    if passphrase is None:
        if not sys.stdin.isatty():
            raise UsageError(f"--key {key} is encrypted: set {publish.PASSPHRASE_ENV} (no terminal to ask on)")
        passphrase = str(click.prompt(f"passphrase of {key}", hide_input=True, err=True))
    return sshsig.load_key(key, passphrase), passphrase


def check_allowed_signers(path: Path | None) -> None:
    """The allowed-signers file read once before any bundle: a file that cannot be read
    whole (a FIFO, a line with an unterminated quote) is one line, not the reason given
    for refusing each bundle in turn."""
    if path is not None:
        from dbarena.exchange import sshsig

        sshsig.allowed_signers(path)


@cli.command()
@store_option
@click.option("--label", "labels", multiple=True, help="Publish the runs of this label (repeatable).")
@click.option("--run", "run_ids", multiple=True, type=click.IntRange(min=1, max=MAX_COUNT), metavar="N",
              help="Publish this run (repeatable; with --label, only runs of those labels).")
@click.option("--key", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Sign with this OpenSSH Ed25519 private key (ssh-keygen -t ed25519); an encrypted one's "
                   "passphrase from DBARENA_KEY_PASSPHRASE, else asked.")
@click.option("--unsigned", is_flag=True, help="Publish without a signature (the bundle says it is unsigned; "
                                               "`verify --allowed-signers` refuses it).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              metavar="BUNDLE", help="The bundle file to write (a tar).")
def publish(store: Path | str, labels: tuple[str, ...], run_ids: tuple[int, ...], key: Path | None, unsigned: bool,
            output: Path) -> None:
    """Write runs of a store as one bundle others can verify: a manifest (every run and
    point as `results --json` prints it, studies, host facts and probes, settings, tool
    versions, prices), the raw tool outputs, the per-second series, SHA256SUMS and an SSH
    signature of the manifest (ssh-keygen -Y verify checks it). The same runs give the
    same bytes. Every password is masked, and the bundle is refused if a secret's value
    (an environment variable named like one, the key's passphrase) would be in it."""
    from dbarena.exchange import publish as publishing

    if not labels and not run_ids:
        raise UsageError("publish: give --label or --run (what to publish)")
    if (key is None) == (not unsigned):
        raise UsageError("publish: give --key FILE to sign the bundle, or --unsigned" if key is None
                         else "publish: --key and --unsigned: give one")
    atomic.check_directory(output)
    signer, passphrase = _signer(key) if key is not None else (None, None)
    secrets = publishing.secrets_of(os.environ, [passphrase] if passphrase else [])
    with open_store(store) as db:
        done = publishing.publish(db, labels=labels, run_ids=run_ids, signer=signer, secrets=secrets)
    atomic.write_bytes(output, done.data)
    signed = f"signed with ED25519 key {done.key}" if done.signed else "UNSIGNED"
    _say(f"wrote {output}: {done.runs} run(s), {done.points} point(s), {len(done.data):,} bytes, {signed}")


@cli.command()
@click.argument("bundles", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path),
                metavar="BUNDLE...")
@click.option("--allowed-signers", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Whose keys are trusted, as ssh-keygen reads it (`principal ssh-ed25519 KEY` a line): a bundle "
                   "signed by another key, or unsigned, is refused.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON array, an object per bundle: verified or the reason it was refused, its signer, "
                   "and the estimator its figures were published with, with each figure that differs from this "
                   "dbarena's recomputation (docs/schema/verify.schema.json).")
def verify(bundles: tuple[Path, ...], allowed_signers: Path | None, as_json: bool) -> int | None:
    """Check bundles: the signature (and whose key), every file's sha256, that no byte
    of the file was changed, that no password is in it, then every figure recomputed
    from the raw outputs (by the importer) and the per-second series, equal to the
    manifest's. A line each; a bundle that fails is refused in one line naming the first
    thing that does not hold (exit 2). A bundle published by a dbarena of another
    estimator version (its derived figures: steady state, warnings, bound ...) has those
    recomputed with this one, and a second line says so and how many differ (exit 0 if
    nothing else fails; import and site show the recomputed figures)."""
    import json

    from dbarena.exchange.bundle import BundleProblem
    from dbarena.exchange.verify import refused_json, verify as check

    check_allowed_signers(allowed_signers)
    failed = False
    documents = []
    for path in bundles:
        try:
            verified = check(path, allowed_signers)
        except BundleProblem as exc:
            line = " ".join(str(exc).split())
            _say(f"dbarena: error: {line}", err=True)
            documents.append(refused_json(str(path), line))
            failed = True
            continue
        documents.append(verified.as_json())
        if not as_json:
            for line in verified.lines():
                _say(line)
    if as_json:
        # (ensure_ascii: a bundle's name or a published value is whatever its writer made it)
        click.echo(json.dumps(documents, indent=1, ensure_ascii=True))
    return ExitStatus.USAGE if failed else None


class _SiteFolder(click.Path):
    """A directory to write a site into, never an empty word: Path("") is the working
    directory, and `-o "$UNSET"` would write the site there."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":
            self.fail("it is empty: give the directory to write the site into", param, ctx)
        return super().convert(value, param, ctx)


@cli.command()
@click.argument("bundles", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path),
                metavar="BUNDLE...")
@click.option("-o", "--output", type=_SiteFolder(file_okay=False, path_type=Path), required=True, metavar="DIR",
              help="The directory to write the site into (index.html, r/, bundles/ ...): a new or empty one, or "
                   "one a site was written into.")
@click.option("--allowed-signers", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Whose keys are trusted, as ssh-keygen reads it: each row then names its signer, and a bundle "
                   "signed by another key, or unsigned, is refused.")
@click.option("--jobs", type=click.IntRange(min=1, max=256), default=None, metavar="N",
              help="Bundles verified at once (default: one per CPU).")
def site(bundles: tuple[Path, ...], output: Path, allowed_signers: Path | None, jobs: int | None) -> int | None:
    """Write a static comparison site of bundles: a row per result (a run at one engine
    and workload) with its sweep curve, filters in the URL (engine, version, workload,
    architecture, CPU model, cloud, instance type, managed), throughput per core and per
    unit of price, each row's trust (verified, signed by which key, imported, its probe
    against others of its machine type), a page per result with its decision against a
    baseline and how to reproduce it. Every bundle is verified first: one that fails is
    listed as refused with its reason (exit 2), never shown. It opens from file:// and
    from any static host; nothing is fetched from elsewhere."""
    from dbarena.exchange import site as making

    making.check_output(output, [*bundles, *([allowed_signers] if allowed_signers else [])])  # before verifying
    if output.exists() and not output.is_dir():
        raise UsageError(f"site: -o {output} is not a directory")
    check_allowed_signers(allowed_signers)
    built = making.build(list(bundles), output, allowed_signers, jobs)
    for line in built.refused:
        _say(f"dbarena: error: refused {line}", err=True)
    _say(f"wrote {output}/index.html: {built.results} result(s) from {built.bundles} bundle(s)"
         + (f", {len(built.refused)} refused" if built.refused else ""))
    return ExitStatus.USAGE if built.refused else None
