"""Wrapping report text at the terminal width, with a hanging indent.

Words are never broken: a token longer than the line (a URL, a trace id, a test id)
stands on a line of its own and may run past the width. That is the one exception to
"every line fits", and it keeps such tokens whole for copying and for terminals that
make links of them.

Every line's text is passed through :func:`pytest_latency.shown_text.shown`: report
lines quote servers (error texts, log tails, model names), and no control character or
workflow command may reach a terminal or a CI log through them.
"""

from __future__ import annotations

import shutil
import textwrap

from pytest_latency.shown_text import shown

MIN_WIDTH = 40  # below this pytest itself assumes 80 columns


def default_width() -> int:
    """The width pytest's terminal writer uses: ``COLUMNS`` or the terminal's, else 80."""
    width = shutil.get_terminal_size(fallback=(80, 24)).columns
    return width if width >= MIN_WIDTH else 80


def wrap(text: str, width: int, indent: str = "", hanging: str = "    ") -> list[str]:
    """``text`` as lines of at most ``width`` columns: the first indented by ``indent``,
    the rest by ``indent + hanging``. Line breaks in ``text`` are kept (log tails)."""
    lines: list[str] = []
    for index, paragraph in enumerate(text.split("\n")):
        first = indent if index == 0 else indent + hanging
        wrapper = textwrap.TextWrapper(
            width=max(width, len(indent + hanging) + 10),
            initial_indent=first,
            subsequent_indent=indent + hanging,
            break_long_words=False,
            break_on_hyphens=False,
        )
        lines.extend(wrapper.wrap(shown(paragraph)) or [first.rstrip()])
    return lines


def wrap_after(used: int, text: str, width: int) -> list[str]:
    """``text`` wrapped at ``width`` where the first line already has ``used`` columns
    (a prefix someone else writes): the first line gets what is left, and when that is
    too little to be useful the text starts on the next line (an empty first line)."""
    if width - used < 20:
        return ["", *wrap(text, width, hanging="")]
    wrapper = textwrap.TextWrapper(
        width=width, initial_indent=" " * used, break_long_words=False, break_on_hyphens=False
    )
    lines = wrapper.wrap(shown(text)) or [" " * used]
    return [lines[0][used:], *lines[1:]]
