"""`dbarena site`'s output directory (issue 53): a site removes only what it wrote. It
writes into a new directory, an empty one, or one a site was written into (its
.dbarena-site marker), and there replaces only a site's own entries; a directory that
holds its inputs (`site bundles/*.tar -o .`), or anything no site wrote, or an empty
-o (the working directory), is refused in one line with nothing removed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import cli_env, error_line
from inprocess import dbarena

from dbarena.exchange import site
from dbarena.exchange.publish import publish
from dbarena.store.database import Store

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    base = tmp_path_factory.mktemp("bundle")
    shutil.copyfile(DEMO, base / "demo.db")
    with Store(base / "demo.db") as db:
        return publish(db, run_ids=[1], signer=None, secrets={}).data


@pytest.fixture
def work(made: bytes, tmp_path: Path) -> Path:
    (tmp_path / "bundles").mkdir()
    (tmp_path / "bundles" / "a.tar").write_bytes(made)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "mine.txt").write_text("mine")
    (tmp_path / "tmp").mkdir()
    return tmp_path


def _site(work: Path, *args: str) -> tuple[int, str]:
    done = dbarena("site", *args, "--jobs", "1", env=cli_env(work / "tmp"), cwd=work)
    return done.returncode, done.stderr


def _untouched(work: Path, made: bytes) -> None:
    assert (work / "bundles" / "a.tar").read_bytes() == made
    assert (work / "r" / "mine.txt").read_text() == "mine"


def test_a_directory_holding_the_inputs_is_refused_and_nothing_removed(work, made):
    code, err = _site(work, "bundles/a.tar", "-o", ".")
    assert code == 2
    assert error_line(err) == ("dbarena: error: site: -o . holds bundles/a.tar, which the site is made from (a "
                               "site's directory holds only what the site writes): give another directory\n")
    _untouched(work, made)
    assert not (work / "index.html").exists()


def test_an_empty_output_is_refused_not_taken_for_the_working_directory(work, made):
    shutil.copyfile(work / "bundles" / "a.tar", work / "tmp" / "b.tar")
    code, err = _site(work, "tmp/b.tar", "-o", "")
    assert code == 2
    assert error_line(err) == ("dbarena: error: Invalid value for '-o' / '--output': it is empty: give the directory "
                               "to write the site into\n")
    _untouched(work, made)


def test_a_directory_no_site_wrote_is_refused(work, made):
    code, err = _site(work, "bundles/a.tar", "-o", "r")
    assert code == 2
    assert error_line(err) == ("dbarena: error: site: -o r holds files no dbarena site wrote (it has no "
                               ".dbarena-site): give a new or empty directory\n")
    _untouched(work, made)


def test_writing_again_replaces_only_the_sites_own_entries(work, made):
    out = work / "public"
    code, err = _site(work, "bundles/a.tar", "-o", "public")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted([*site.WRITES, site.MARKER])
    first = sorted(p.name for p in (out / "r").iterdir())
    (out / "r" / "stale.html").write_text("from before")
    (out / "CNAME").write_text("results.example.org")  # the user's, beside the site
    (out / ".dbarena-site-new-killed").mkdir()  # what a killed site left
    (out / ".dbarena-site-new-killed" / "index.html").write_text("half")
    code, err = _site(work, "bundles/a.tar", "-o", "public")
    assert code == 0, err
    assert sorted(p.name for p in (out / "r").iterdir()) == first  # the stale page gone with the old r/
    assert (out / "CNAME").read_text() == "results.example.org"
    assert sorted(p.name for p in out.iterdir()) == sorted([*site.WRITES, site.MARKER, "CNAME"])
    _untouched(work, made)


def test_what_is_not_a_sites_where_a_site_writes_is_refused(work, made):
    out = work / "public"
    assert _site(work, "bundles/a.tar", "-o", "public")[0] == 0
    shutil.rmtree(out / "bundles")
    (out / "bundles").symlink_to(work / "bundles")
    code, err = _site(work, "bundles/a.tar", "-o", "public")
    assert code == 2
    assert error_line(err) == (f"dbarena: error: site: public/bundles is a symbolic link, not what a site writes "
                               f"there: remove it, or give another directory\n")
    (work / "link").symlink_to(work / "r")
    code, err = _site(work, "bundles/a.tar", "-o", "link")
    assert error_line(err) == ("dbarena: error: site: -o link is a symbolic link, not a directory (dbarena writes "
                               "nothing through one: give the directory it names)\n")
    _untouched(work, made)


def test_an_output_that_cannot_be_made_is_one_line(work):
    code, err = _site(work, "bundles/a.tar", "-o", "/proc/site")
    assert code == 3
    assert error_line(err) == "dbarena: error: site: cannot write /proc/site: No such file or directory\n"


def test_a_site_with_workers_leaves_nothing_in_tmpdir(work):
    done = dbarena("site", "bundles/a.tar", "bundles/a.tar", "bundles/a.tar", "-o", "public", "--jobs", "2",
                   env=cli_env(work / "tmp"), cwd=work)
    assert done.returncode == 0, done.stderr
    assert os.listdir(work / "tmp") == []  # no dbarena-bundle-template-* (forked workers skip atexit)
