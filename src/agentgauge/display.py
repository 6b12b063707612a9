"""Untrusted text shown to a person: one rule per medium.

Agent names, model names, task ids, error messages and transcripts come from
whoever wrote the trials. Wherever they are shown they must read as written
and must not act: no terminal escape sequence that clears the screen, no Rich
markup that becomes a hyperlink, no Markdown that starts a heading or hides a
link's target, no HTML that plotly renders as a live link or a styled element
(docs/reports.md, "Untrusted text").

- `visible`: control characters, Unicode bidirectional controls and zero-width
  spaces written as escapes (``\\x1b``, ``\\u202e``, ``\\u200b``), for every medium;
- `terminal_text`: a `rich.text.Text` (never parsed as markup), controls visible;
- `markdown_text`: one line of Markdown that renders as written;
- `plotly_text`: text for plotly, which renders a subset of HTML in legend
  names, tick labels, hover text, annotations and titles but decodes entities,
  so escaped text shows as written.
"""

from __future__ import annotations

import html
import re
import shlex
from collections.abc import Sequence
from typing import Any

import jinja2
from markupsafe import Markup
from rich.text import Text

__all__ = [
    "html_environment",
    "markdown_text",
    "plotly_text",
    "shell_command",
    "terminal_text",
    "terminal_warning",
    "visible",
]

#: Bidirectional controls (Unicode Standard Annex #9, "Explicit Directional
#: Formatting Characters"): they reorder what is shown around them ("Trojan
#: Source", Boucher & Anderson 2021), so ``evil\u202etxt.exe`` reads as something else.
#: U+2028/U+2029 are line breaks to some renderers although not to Python's ``\n``.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
#: Characters that print as nothing and join or split nothing a reader could see: the
#: zero-width space, the word joiner and the zero-width no-break space (the BOM), so
#: ``ba\u200bse`` would print as ``base``. The zero-width joiner and non-joiner are
#: left alone: they shape emoji sequences and Persian or Indic text, which they change
#: visibly.
_INVISIBLE = "\u200b\u2060\ufeff"
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f" + _BIDI + _INVISIBLE + "]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: Any, *, keep: str = "") -> str:
    """``text`` with every control character (C0, DEL, C1), bidirectional control and
    zero-width space (`_INVISIBLE`) written as a visible escape, except those in
    ``keep`` (say ``"\\n\\t"`` where the medium shows line breaks and tabs as such)."""
    s = str(text)
    if keep:
        return _CONTROLS.sub(lambda m: m.group() if m.group() in keep else _escape(m), s)
    return _CONTROLS.sub(_escape, s)


def shell_command(args: Sequence[str]) -> str:
    """``args`` as a command line a POSIX shell (bash, zsh) runs as given, with no
    control character in it: an argument holding one is quoted the ANSI-C way
    (``$'line\\nbreak'``) so the escape is the shell's, not a literal backslash (the
    plain ``shlex`` quoting, shown through `visible`, gave ``'line\\x0abreak'``,
    which names another task)."""

    def quote(arg: str) -> str:
        if not _CONTROLS.search(arg):
            return shlex.quote(arg)
        body = arg.replace("\\", "\\\\").replace("'", "\\'")
        return "$'" + _CONTROLS.sub(_escape, body) + "'"

    return " ".join(quote(a) for a in args)


def terminal_text(text: Any, style: str = "", *, keep: str = "") -> Text:
    """Data for a Rich console: a `Text`, so ``[link=...]`` stays literal, and with
    controls made visible, so an ESC from the data never reaches the terminal."""
    return Text(visible(text, keep=keep), style=style)


def terminal_warning(message: Any) -> Text:
    """``warning: MESSAGE`` for a Rich console, the message shown as `terminal_text`."""
    return Text.assemble(("warning:", "yellow"), " ", terminal_text(message))


#: ``<`` opens raw HTML or an autolink in CommonMark only before these (CommonMark
#: 0.31, "Raw HTML" and "Autolinks"); written as ``&lt;`` there, a transcript cannot
#: inject markup, and ``p < 0.001`` stays as written.
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
#: Punctuation that starts inline Markdown: emphasis, code spans, links and images
#: (``!`` acts only before ``[``), strikethrough, table cells, entities, and ``#``
#: (a heading where a value starts a line, a closing sequence at a heading's end).
#: CommonMark lets any ASCII punctuation be backslash-escaped ("Backslash escapes").
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|~#&])")


def markdown_text(text: Any) -> str:
    """Untrusted text as one line of Markdown (a table cell or an inline value) that
    renders as written: line breaks become spaces, so a value cannot end a table row
    or start a heading, and markup characters are escaped."""
    one_line = " ".join(visible(text, keep="\n\r\x0b\x0c\x1c\x1d\x1e\x85").splitlines())
    return _TAG_START.sub("&lt;", _MARKDOWN_PUNCTUATION.sub(r"\\\1", one_line))


def plotly_text(text: Any) -> str:
    """Text for any string plotly draws (trace names, tick labels, hover text,
    annotations, titles). plotly.js reads ``<a href>``, ``<span style>``, ``<br>`` and
    other tags in them and decodes entities, so the escaped text shows as written."""
    return html.escape(visible(text), quote=False)


def _html_value(value: Any) -> Any:
    """Every value an HTML template prints, controls made visible; markup built by
    agentgauge itself (a plot, a pre-rendered fragment) is left as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value, keep="\n\t")
    return value


def html_environment(loader: jinja2.BaseLoader) -> jinja2.Environment:
    """The Jinja2 environment of every HTML page agentgauge writes (the report, the
    viewer): autoescaping on for every template, an undefined name an error, and every
    printed value through `visible`."""
    return jinja2.Environment(
        loader=loader,
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_html_value,
    )
