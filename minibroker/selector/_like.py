"""LIKE patterns matched in linear time.

A pattern is cut at its ``%`` signs into pieces of fixed length (literal characters and ``_``). The first piece
must sit at the start of the value, the last at its end, and each middle piece is taken at its leftmost place
after the previous one: with fixed-length pieces the leftmost place is never worse, so nothing is ever retried.
A value is scanned once per piece at most, so no pattern can make matching explode the way a backtracking
regular expression (``.*a.*a.*b``) does on a long value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

__all__ = ["LikePattern", "compile_like"]

#: a piece's matcher: the index where the piece matches in ``value`` at (``anchored``) or after ``start``, or -1
_Finder = Callable[[str, int, bool], int]


@attrs.frozen
class LikePattern:
    """A compiled LIKE pattern; ``matches`` says whether the whole value matches it."""

    pieces: tuple[tuple[int, _Finder], ...]  # (length, finder) for each piece between % signs
    starts_free: bool  # the pattern starts with %
    ends_free: bool  # the pattern ends with %

    def matches(self, value: str) -> bool:
        pieces = self.pieces
        if not pieces:  # only % signs, or an empty pattern
            return self.starts_free or value == ""
        position = 0
        last = len(pieces) - 1
        for index, (length, find) in enumerate(pieces):
            if index == last and not self.ends_free:
                at = len(value) - length
                if index == 0 and not self.starts_free:  # no % at all: the piece is the whole value
                    return at == 0 and find(value, 0, True) == 0
                # the last piece sits at the end, after what the earlier pieces took
                return at >= position and find(value, at, True) == at
            found = find(value, position, index == 0 and not self.starts_free)
            if found < 0:
                return False
            position = found + length
        return True


def compile_like(pattern: str, escape: str | None) -> LikePattern:
    """``%`` any run, ``_`` one character, escape + ``%``/``_``/escape a literal (ActiveMQ's reading)."""
    pieces: list[list[str | None]] = [[]]  # None stands for _
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if escape is not None and c == escape and i + 1 < len(pattern) and pattern[i + 1] in ("%", "_", escape):
            pieces[-1].append(pattern[i + 1])
            i += 2
            continue
        if c == "%":
            pieces.append([])
        else:
            pieces[-1].append(None if c == "_" else c)
        i += 1
    starts_free = len(pieces) > 1 and not pieces[0]
    ends_free = len(pieces) > 1 and not pieces[-1]
    return LikePattern(tuple((len(p), _finder(p)) for p in pieces if p), starts_free, ends_free)


def _finder(piece: list[str | None]) -> _Finder:
    if None not in piece:
        literal = "".join(c for c in piece if c is not None)

        def find_literal(value: str, start: int, anchored: bool) -> int:
            if anchored:
                return start if value.startswith(literal, start) else -1
            return value.find(literal, start)

        return find_literal
    # a fixed-length regular expression: no quantifier, so each try is bounded by the piece's length
    regex = re.compile("".join("." if c is None else re.escape(c) for c in piece), re.DOTALL)

    def find_wild(value: str, start: int, anchored: bool) -> int:
        match = regex.match(value, start) if anchored else regex.search(value, start)
        return -1 if match is None else match.start()

    return find_wild
