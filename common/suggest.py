"""The one "did you mean" of hookrun: the closest known names to a misspelt one. No TensorFlow.

Every message that suggests a name (config keys, hook types, builders, modules, tensors, columns,
the ``early_stopping`` monitor) asks :func:`closest`. Candidates are ranked, best first:

1. the same name up to case (``Val_Loss`` -> ``val_loss``);
2. a name the word is a prefix of (``val_acc`` -> ``val_accuracy``), or that is a prefix of it (both at
   least 3 characters);
3. a name holding every word of the shorter of the two, words split at ``_``, ``.``, ``-``, ``/`` and ``:``
   (``loss_val`` -> ``val_loss``), if still half as similar as ``cutoff`` asks;
4. edit-distance similarity (``difflib.SequenceMatcher`` ratio, at least ``cutoff``), as
   ``difflib.get_close_matches`` ranks.

so a shortened name finds its full form before a same-length name one letter away
(``val_acc`` -> ``val_accuracy``, not ``val_auc``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

_WORD_SPLIT = re.compile(r"[_.\-/:\s]+")


def _words(name: str) -> set[str]:
    return {w for w in _WORD_SPLIT.split(name.lower()) if w}


def closest(word: str, choices: Iterable[str], n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The known names closest to ``word``, best first (see the module's ranking).

    Args:
        word: the unknown name, as the user wrote it.
        choices: the known names (duplicates are ignored; ``word`` itself is never suggested).
        n: at most this many suggestions.
        cutoff: the least ``SequenceMatcher`` ratio (0 to 1) for a suggestion by edit distance alone.

    Returns:
        Up to ``n`` names, best first; empty when nothing is close.
    """
    known = [c for c in dict.fromkeys(choices) if c != word]
    if not word or not known or n <= 0:
        return []
    lower = word.lower()
    words = _words(word)
    ranked: list[tuple[tuple[float, ...], str]] = []
    for choice in known:
        other = choice.lower()
        ratio = difflib.SequenceMatcher(None, lower, other).ratio()
        if other == lower:
            tier = 4.0
        elif min(len(lower), len(other)) >= 3 and (other.startswith(lower) or lower.startswith(other)):
            tier = 3.0
        else:
            theirs = _words(choice)
            shared = len(words & theirs)
            if shared and shared == min(len(words), len(theirs)) and ratio >= cutoff / 2:
                tier = 2.0
            elif ratio >= cutoff:
                tier = 1.0
            else:
                continue
        ranked.append(((tier, ratio), choice))
    ranked.sort(key=lambda item: item[0], reverse=True)
    return [choice for _, choice in ranked[:n]]


def did_you_mean(word: str, choices: Iterable[str], quote: str = "`") -> str:
    """``"; did you mean `x`?"`` for the closest known name, or ``""`` when none is close.

    Args:
        word: the unknown name.
        choices: the known names.
        quote: how the suggestion is quoted: ``"`"`` (default) or ``"'"`` (Python repr style).
    """
    match = closest(word, choices)
    if not match:
        return ""
    shown = repr(match[0]) if quote == "'" else f"`{match[0]}`"
    return f"; did you mean {shown}?"
