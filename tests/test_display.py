"""The rule for untrusted text, per medium, on hand-written cases (docs/reports.md)."""

from __future__ import annotations

from agentgauge.display import markdown_text, plotly_text, terminal_text, visible


def test_visible_writes_controls_and_bidi_as_escapes() -> None:
    assert visible("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert visible("\x00\x7f\x85\x9b") == "\\x00\\x7f\\x85\\x9b"  # C0, DEL, C1 (NEL, CSI)
    assert visible("abc\u202etxt.exe") == "abc\\u202etxt.exe"
    assert visible("\u2066\u2069\u200e\u200f\u061c") == "\\u2066\\u2069\\u200e\\u200f\\u061c"
    assert visible("one\ntwo\tthree") == "one\\x0atwo\\x09three"
    assert visible("one\ntwo\tthree", keep="\n\t") == "one\ntwo\tthree"
    assert visible("café ✓ ± 日本") == "café ✓ ± 日本"  # printable text is left alone


def test_visible_shows_characters_that_print_as_nothing() -> None:
    # A zero-width space, word joiner or BOM inside a name would print it as another.
    assert visible("ba\u200bse") == "ba\\u200bse"
    assert visible("\ufeffbase\u2060") == "\\ufeffbase\\u2060"
    # The joiners shape what is shown (an emoji family, Persian words): left alone.
    assert visible("\U0001f468\u200d\U0001f469") == "\U0001f468\u200d\U0001f469"
    assert visible("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645") == (
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"
    )


def test_terminal_text_is_never_markup() -> None:
    text = terminal_text("[link=https://example.com]x[/link]\x1b[2J", "bold")
    assert text.plain == "[link=https://example.com]x[/link]\\x1b[2J"
    assert not text.spans and text.style == "bold"


def test_markdown_text_escapes_what_would_act() -> None:
    assert markdown_text("a\n# b") == "a \\# b"
    assert markdown_text("![i](http://x/y.png)") == "!\\[i\\](http://x/y.png)"
    assert markdown_text("*a* _b_ `c` ~d~ &amp;") == "\\*a\\* \\_b\\_ \\`c\\` \\~d\\~ \\&amp;"
    assert markdown_text("<a href=x>") == "&lt;a href=x>"
    assert markdown_text("p < 0.001") == "p < 0.001"
    assert markdown_text("x\u2028y\x1b") == "x\\\\u2028y\\\\x1b"  # the escape's \\ is escaped


def test_plotly_text_escapes_tags_and_entities() -> None:
    assert plotly_text('<a href="u">x</a>') == '&lt;a href="u"&gt;x&lt;/a&gt;'
    assert plotly_text("a & b <br>") == "a &amp; b &lt;br&gt;"
    assert plotly_text("\u202e") == "\\u202e"
