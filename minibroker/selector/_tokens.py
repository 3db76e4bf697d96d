"""The selector lexer: text to tokens, with ActiveMQ's literal forms, comments and keywords."""

from __future__ import annotations

import enum
import re

import attrs

from minibroker._java.values import JAVA_LONG_MAX
from minibroker.errors import InvalidSelector


def selector_error(text: str, position: int, reason: str) -> InvalidSelector:
    """The error for a selector that does not parse, pointing at ``position`` in ``text``."""
    shown = repr(text) if len(text) <= 200 else f"{text[:100]!r}... ({len(text)} characters)"
    return InvalidSelector(
        f"invalid selector {shown}: {reason} at position {position}",
        selector=text,
        position=position,
        reason=reason,
    )


class TokenKind(enum.Enum):
    STRING = "string"
    NUMBER = "number"
    IDENT = "identifier"
    KEYWORD = "keyword"
    OP = "operator"
    END = "end of selector"


@attrs.frozen
class Token:
    kind: TokenKind
    text: str
    position: int
    value: object = None

    def describe(self) -> str:
        return "end of selector" if self.kind is TokenKind.END else repr(self.text)


_KEYWORDS = frozenset(
    {"NOT", "AND", "OR", "BETWEEN", "LIKE", "ESCAPE", "IN", "IS", "TRUE", "FALSE", "NULL", "XPATH", "XQUERY"}
)
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# ActiveMQ's literal tokens; the longest match wins, ties go to the first listed (as in JavaCC).
_NUMBER_FORMS = (
    ("decimal", re.compile(r"[1-9][0-9]*[lL]?")),
    ("hex", re.compile(r"0[xX][0-9a-fA-F]+")),
    ("octal", re.compile(r"0[0-7]*")),
    (
        "float",
        re.compile(r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+"),
    ),
)
_OPERATOR = re.compile(r"<>|<=|>=|[=<>(),+\-*/%]")
_WHITESPACE = " \t\n\r\f"
# a -- comment runs to the end of its line; one search, so many comments stay linear
_LINE_END = re.compile(r"[\n\r]")


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in _WHITESPACE:
            i += 1
        elif text.startswith("--", i):
            line_end = _LINE_END.search(text, i)
            i = n if line_end is None else line_end.start()
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise selector_error(text, i, "unterminated comment")
            i = end + 2
        elif c == "'":
            i = _string_token(text, i, tokens)
        elif c.isascii() and (c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit())):
            i = _number_token(text, i, tokens)
        elif match := _IDENT.match(text, i):
            word = match.group()
            upper = word.upper()
            if upper in _KEYWORDS:
                if upper in ("XPATH", "XQUERY"):
                    raise selector_error(text, i, f"{upper} selectors are not supported")
                tokens.append(Token(TokenKind.KEYWORD, upper, i))
            else:
                tokens.append(Token(TokenKind.IDENT, word, i))
            i = match.end()
        else:
            operator = _OPERATOR.match(text, i)
            if operator is None:
                raise selector_error(text, i, f"unexpected character {c!r}")
            tokens.append(Token(TokenKind.OP, operator.group(), i))
            i = operator.end()
    tokens.append(Token(TokenKind.END, "", n))
    return tokens


def _string_token(text: str, start: int, tokens: list[Token]) -> int:
    chars: list[str] = []
    i = start + 1
    while True:
        end = text.find("'", i)
        if end < 0:
            raise selector_error(text, start, "unterminated string literal")
        chars.append(text[i:end])
        if text.startswith("''", end):
            chars.append("'")
            i = end + 2
            continue
        tokens.append(Token(TokenKind.STRING, text[start : end + 1], start, "".join(chars)))
        return end + 1


def _number_token(text: str, start: int, tokens: list[Token]) -> int:
    best: tuple[str, str] | None = None
    for form, pattern in _NUMBER_FORMS:
        match = pattern.match(text, start)
        if match and (best is None or len(match.group()) > len(best[1])):
            best = (form, match.group())
    if best is None:  # pragma: no cover - the caller only calls on a digit or ".digit"
        raise selector_error(text, start, "malformed number")
    form, literal = best
    value: int | float
    if form == "float":
        value = float(literal)
    elif form == "decimal":
        value = int(literal.rstrip("lL"))
    else:
        value = int(literal[2:], 16) if form == "hex" else int(literal, 8)
        if value > JAVA_LONG_MAX:
            raise selector_error(text, start, f"number {literal} is too large")
    tokens.append(Token(TokenKind.NUMBER, literal, start, value))
    return start + len(literal)
