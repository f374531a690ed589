"""Text a server (or a span sender, or a saved file) controls, made safe to show.

A model id, an error body, a header or a span attribute is the other side's text. Shown
raw it can print its own lines: a newline followed by ``::error title=...::`` becomes a
GitHub Actions annotation (``::add-mask::`` works the same way), and ANSI escapes clear
the screen, set the window title or plant OSC-8 links. :func:`shown` escapes every C0
and C1 control character (ESC, CR and LF among them), DEL and the Unicode line and
paragraph separators as ``\\xNN`` / ``\\uNNNN``, so the text stays on one line and
carries no terminal command; and a ``::`` that starts a word it writes as ``:\\x3a``, so no
CI runner reads a workflow command (``::error::``, ``::add-mask::``) in it, wherever a
line is wrapped (an IPv6 address, ``[::1]``, is left alone).
"""

from __future__ import annotations

import re

# C0 (tab included), DEL, C1, and the Unicode line/paragraph separators (and NEL, in C1).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_COMMAND = re.compile(r"(?:^|(?<=\s))::")  # where a wrapped line could start with it


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def shown(text: str, limit: int | None = None) -> str:
    """``text`` with control characters escaped (see the module doc), cut to ``limit``
    characters (with ``…``) when given."""
    safe = _COMMAND.sub(r":\\x3a", _CONTROL.sub(_escape, text))
    if limit is not None and len(safe) > limit:
        return safe[: max(0, limit - 1)] + "…"
    return safe


def has_control(text: str) -> bool:
    """Whether ``text`` holds a character :func:`shown` would escape."""
    return _CONTROL.search(text) is not None
