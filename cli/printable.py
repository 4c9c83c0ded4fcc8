"""Text from files and directory names, made safe to print on a terminal (standard library only)."""

from __future__ import annotations

import re

#: C0 and C1 control characters, DEL, and the Unicode controls that reorder or hide text (bidi
#: embeddings, overrides and isolates; line and paragraph separators).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    r"""``text`` with every control character shown as its Python escape, so printing it is inert.

    ``ESC[2J`` (which would clear the screen) prints as ``\x1b[2J``, a newline as ``\n`` (so a row
    stays one row), a bidi override as ``\u202e``; a surrogate from an undecodable file name
    (``os.fsdecode``) as ``\udcff``. Everything else, including backslashes, is kept as it is.

    Args:
        text: a run's name, a value read from one of its files, a note.
    """
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
    if any("\ud800" <= char <= "\udfff" for char in text):
        text = "".join(repr(c)[1:-1] if "\ud800" <= c <= "\udfff" else c for c in text)
    return text
