"""report/escaping.py: a value through md_text shows as written wherever a Markdown
writer puts it (a table cell, a list item, the start of a line, a heading), read back
by a CommonMark renderer with GFM tables (markdown_render.py); through html_text it is
text in HTML. The hostile strings are those of issue 46 and their kin."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbarena.report.escaping import ZERO_WIDTH_SPACE, html_text, md_text
from markdown_render import read

HOSTILE = [
    "a|b", "a\\|b", "ends with \\", "line\nbreak", "cr\rhere\r\nand crlf", "tab\there", "sep\u2028arator",
    "# h", "## injected heading", "first\n## injected heading\n<details open>", "> quote", "- item", "+ item",
    "* item", "1. one", "2) two", "---", "===", "***", "___", "    four spaces: code",
    "<img src=x onerror=alert(1)>", "<details open>", "<!-- comment -->", "<script>alert(1)</script>",
    "<http://x.example>", "[link](http://x)", "![img](x)", "[ref]: http://x", "[x][ref]",
    "@mention", "hi @user and @org/team", "`code`", "```fence", "~~~fence", "*em*", "**strong**", "_em_",
    "__strong__", "~~strike~~", "&lt;b&gt;", "&#124;", "&#x7c;", "a &amp; b",
    "label|x\n<img src=x onerror=alert(1)>",
]
# What a reader sees of a value: one line (every break a space), no leading or trailing
# space, and a mention broken by a zero-width space after its @.
_BREAKS = re.compile(r"[\r\n\t\u2028]+")
_MENTION = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9])")


def shown(value: str) -> str:
    return _MENTION.sub("@" + ZERO_WIDTH_SPACE, _BREAKS.sub(" ", value).strip())


# Each place a writer puts a value, the tags it may render to, and where its text is.
PLACES = {
    "table cell": ("| a | b |\n|---|---|\n| {} | x |\n", {"table", "thead", "tbody", "tr", "th", "td"}),
    "list item": ("- {}\n", {"ul", "li"}),
    "line start": ("{}.\n", {"p"}),
    "heading": ("### {} against main\n", {"h3"}),
    "bold": ("- **{}**: why\n", {"ul", "li", "strong"}),
}


def check(value: str, place: str) -> None:
    template, allowed = PLACES[place]
    out = read(template.format(md_text(value)))
    assert set(out.tags) <= allowed, (value, place, out.html)
    if place == "table cell":
        assert out.rows[1:] == [[shown(value), "x"]], (value, out.html)
    elif place == "list item":
        assert out.text.strip() == shown(value), (value, out.html)
    elif place == "line start":
        assert out.text.strip() == shown(value) + ".", (value, out.html)
    elif place == "heading":
        assert out.text.strip() == (shown(value) + " against main").strip(), (value, out.html)
    else:
        assert out.text.strip() == shown(value) + ": why", (value, out.html)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_value_shows_as_written_and_adds_no_markup(value: str, place: str) -> None:
    check(value, place)


def test_no_mention_survives_and_user_at_host_is_kept() -> None:
    # GitHub finds mentions in the rendered text (an entity or a backslash before the @
    # would be gone there): what it would take for one must not be in it.
    for value in ("@mention", "hi @user", "(@org/team)", "é@user"):
        assert not re.search(r"(?<![A-Za-z0-9_])@[A-Za-z0-9]", read(md_text(value)).text), value
    assert md_text("dbarena@127.0.0.1") == "dbarena@127.0.0.1"


@pytest.mark.parametrize("value", ["pgbench-tpcb", "synchronous_commit=on", "17.2", "-19.8 % at run 6",
                                   "setting synchronous_commit off -> on; server version 17.2 -> 17.4",
                                   "label 'nightly' (runs 3-9)", "1: 1,000.0 (3) -> 808.0 (3)", "R&D", "", "n=1, k=2"])
def test_an_ordinary_value_is_unchanged(value: str) -> None:
    assert md_text(value) == value


def test_characters_that_act_on_a_terminal_are_dropped() -> None:
    assert md_text("a\x1b]0;title\x07b\u202ec") == "a\\]0;titlebc"


# Letters, spaces, line breaks and every character with a meaning in Markdown or HTML.
_TEXT = st.text(alphabet=st.sampled_from(list("ab1 _*`[]()!<>&#;|\\-+=.:~@/\n\r\t")), max_size=24)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_any_text_shows_as_written_in_a_cell_and_a_list_item(value: str) -> None:
    check(value, "table cell")
    check(value, "list item")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text += data


@pytest.mark.parametrize("value", HOSTILE + ['" onmouseover="alert(1)', "' x='"])
def test_html_text_is_text_in_an_element_and_an_attribute(value: str) -> None:
    page = _Text()
    page.feed(f'<p title="{html_text(value)}">{html_text(value)}</p>')
    page.close()
    assert page.tags == ["p"] and page.text == value
