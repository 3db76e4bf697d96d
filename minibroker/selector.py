"""JMS message selectors: the SQL-92 subset ActiveMQ Classic accepts, parsed once and matched many times.

A consumer's selector is validated when the consumer is created (a bad one is refused with
:class:`~minibroker.errors.InvalidSelector`), then evaluated against every candidate message. So parsing does
all the checking and produces a tree of small closures; matching only calls them.

Semantics follow ActiveMQ's ``SelectorParser.jj`` and ``filter`` package where the JMS specification leaves
room:

* SQL three-valued logic: an absent property is NULL, comparisons with NULL are *unknown*, and a message is
  selected only when the whole selector is *true*.
* Values of different types are not equal and not ordered (``'1' = 1`` is false, not an error), so
  ``'1' <> 1`` is true; numbers compare across int and float; booleans only with ``=`` and ``<>``.
* Literal operands that can never compare are refused at parse time, as ActiveMQ does: ``x > 'a'``,
  ``x = NULL``, ``TRUE = 1``, ``(a = 1) < 2``.
* ``NOT`` binds looser than comparisons (``NOT a = 1`` means ``NOT (a = 1)``), as the JMS specification says.
* ``/`` and ``%`` always give floats (Java doubles), so ``1 / 0`` is infinity, not an error.
* A selector starting with ``convert_string_expressions:`` (what ActiveMQ's STOMP connector puts before every
  SUBSCRIBE selector, since STOMP headers are all strings) reads a string compared with a number or a boolean
  (``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``) as that type first, with Java's ``valueOf`` rules: so
  ``x = 5`` and ``x > 4`` select a message whose ``x`` is ``"5"``. A string that does not read (``"5.0"`` against an
  integer, ``"abc"``) is neither equal nor ordered. ``IN``, ``LIKE`` and arithmetic never convert.
"""

from __future__ import annotations

import enum
import functools
import math
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from minibroker.errors import InvalidSelector

__all__ = ["CONVERT_STRINGS_PREFIX", "Lookup", "Selector", "parse_selector"]

#: How a selector reads a message: identifier -> header or property value, or None when absent.
Lookup = Callable[[str], object]

_Value = Callable[[Lookup], object]
_Truth = Callable[[Lookup], bool | None]

_JAVA_LONG_MAX = 2**63 - 1

#: ActiveMQ's parser prefix for selectors whose comparisons read strings as numbers or booleans
CONVERT_STRINGS_PREFIX = "convert_string_expressions:"


@attrs.frozen
class Selector:
    """A parsed selector. Immutable and hashable: one instance serves every consumer with the same text."""

    text: str
    _truth: _Truth = attrs.field(eq=False, repr=False)
    #: the identifiers the selector reads, so a caller can tell which headers it needs
    identifiers: frozenset[str] = frozenset()

    @property
    def match_all(self) -> bool:
        """True for an empty selector, which JMS treats as no selector at all."""
        return not self.text.removeprefix(CONVERT_STRINGS_PREFIX).strip()

    def evaluate(self, lookup: Lookup) -> bool | None:
        """The three-valued result: True, False, or None for unknown (which does not select the message)."""
        return self._truth(lookup)

    def matches(self, lookup: Lookup) -> bool:
        """Whether a message whose headers and properties ``lookup`` returns is selected."""
        return self._truth(lookup) is True


def parse_selector(text: str) -> Selector:
    """Parse and check a selector; a blank one matches everything.

    Raises :class:`InvalidSelector` with ``selector`` (the text), ``position`` (0-based offset of the problem)
    and ``reason``. Results are cached, since many consumers tend to share a few selectors.
    """
    if not isinstance(text, str):
        raise InvalidSelector(f"a selector must be a string, not {type(text).__name__}", selector=text)
    return _parse_cached(text)


@functools.lru_cache(maxsize=512)
def _parse_cached(text: str) -> Selector:
    body = text.removeprefix(CONVERT_STRINGS_PREFIX)
    if not body.strip():
        return Selector(text, _always_true)
    # positions in errors count from the expression itself, after any prefix
    parser = _Parser(body, _tokenize(body), convert_strings=body is not text)
    truth, identifiers = parser.parse()
    return Selector(text, truth, identifiers)


def _always_true(lookup: Lookup) -> bool | None:
    return True


def _error(text: str, position: int, reason: str) -> InvalidSelector:
    return InvalidSelector(
        f"invalid selector {text!r}: {reason} at position {position}",
        selector=text,
        position=position,
        reason=reason,
    )


# ----------------------------------------------------------------------------------------------------
# Tokens
# ----------------------------------------------------------------------------------------------------


class _T(enum.Enum):
    STRING = "string"
    NUMBER = "number"
    IDENT = "identifier"
    KEYWORD = "keyword"
    OP = "operator"
    END = "end of selector"


@attrs.frozen
class _Token:
    kind: _T
    text: str
    position: int
    value: object = None

    def describe(self) -> str:
        return "end of selector" if self.kind is _T.END else repr(self.text)


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
_OPERATORS = ("<>", "<=", ">=", "=", "<", ">", "(", ")", ",", "+", "-", "*", "/", "%")
_WHITESPACE = " \t\n\r\f"


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in _WHITESPACE:
            i += 1
        elif text.startswith("--", i):
            end = min((p for p in (text.find("\n", i), text.find("\r", i)) if p >= 0), default=n)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise _error(text, i, "unterminated comment")
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
                    raise _error(text, i, f"{upper} selectors are not supported")
                tokens.append(_Token(_T.KEYWORD, upper, i))
            else:
                tokens.append(_Token(_T.IDENT, word, i))
            i = match.end()
        else:
            op = next((op for op in _OPERATORS if text.startswith(op, i)), None)
            if op is None:
                raise _error(text, i, f"unexpected character {c!r}")
            tokens.append(_Token(_T.OP, op, i))
            i += len(op)
    tokens.append(_Token(_T.END, "", n))
    return tokens


def _string_token(text: str, start: int, tokens: list[_Token]) -> int:
    chars: list[str] = []
    i = start + 1
    while True:
        end = text.find("'", i)
        if end < 0:
            raise _error(text, start, "unterminated string literal")
        chars.append(text[i:end])
        if text.startswith("''", end):
            chars.append("'")
            i = end + 2
            continue
        tokens.append(_Token(_T.STRING, text[start : end + 1], start, "".join(chars)))
        return end + 1


def _number_token(text: str, start: int, tokens: list[_Token]) -> int:
    best: tuple[str, str] | None = None
    for form, pattern in _NUMBER_FORMS:
        match = pattern.match(text, start)
        if match and (best is None or len(match.group()) > len(best[1])):
            best = (form, match.group())
    if best is None:  # pragma: no cover - the caller only calls on a digit or ".digit"
        raise _error(text, start, "malformed number")
    form, literal = best
    value: int | float
    if form == "float":
        value = float(literal)
    elif form == "decimal":
        value = int(literal.rstrip("lL"))
    else:
        value = int(literal[2:], 16) if form == "hex" else int(literal, 8)
        if value > _JAVA_LONG_MAX:
            raise _error(text, start, f"number {literal} is too large")
    tokens.append(_Token(_T.NUMBER, literal, start, value))
    return start + len(literal)


# ----------------------------------------------------------------------------------------------------
# Expression nodes
# ----------------------------------------------------------------------------------------------------


class _K(enum.Enum):
    """What the parser knows about an expression, for ActiveMQ's parse-time type checks."""

    BOOLEAN = "a boolean expression"
    BOOLEAN_LITERAL = "a boolean literal"
    PROPERTY = "a property"
    NUMBER_LITERAL = "a number literal"
    STRING_LITERAL = "a string literal"
    NULL = "NULL"
    VALUE = "an arithmetic expression"


_LITERALS = (_K.BOOLEAN_LITERAL, _K.NUMBER_LITERAL, _K.STRING_LITERAL)
_BOOLEANS = (_K.BOOLEAN, _K.BOOLEAN_LITERAL)


@attrs.frozen
class _Node:
    kind: _K
    value: _Value
    position: int
    truth: _Truth | None = None


def _boolean(truth: _Truth, position: int, kind: _K = _K.BOOLEAN) -> _Node:
    return _Node(kind, truth, position, truth)


def _constant(value: object) -> _Value:
    def constant(lookup: Lookup) -> object:
        return value

    return constant


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# -- comparisons ------------------------------------------------------------------------------------


def _equal(left: object, right: object) -> bool | None:
    if left is None or right is None:
        return None
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if _is_number(left) and _is_number(right):
        return bool(left == right)
    if type(left) is type(right) or (isinstance(left, str) and isinstance(right, str)):
        return bool(left == right)
    return False


def _ordering(compare: Callable[[Any, Any], bool]) -> Callable[[object, object], bool | None]:
    def ordered(left: object, right: object) -> bool | None:
        if left is None or right is None:
            return None
        if isinstance(left, bool) or isinstance(right, bool):
            return False
        if (_is_number(left) and _is_number(right)) or (isinstance(left, str) and isinstance(right, str)):
            return bool(compare(left, right))
        return False

    return ordered


_ORDERINGS = {
    ">": _ordering(operator.gt),
    ">=": _ordering(operator.ge),
    "<": _ordering(operator.lt),
    "<=": _ordering(operator.le),
}

# -- convert_string_expressions ---------------------------------------------------------------------

#: what Java's Long.valueOf reads (no spaces, an optional sign, digits)
_JAVA_LONG = re.compile(r"[+-]?\d+")
#: what Java's Double.valueOf reads once it has trimmed the ends (hexadecimal floats aside)
_JAVA_DOUBLE = re.compile(r"([+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))[fFdD]?")
_JAVA_WHITESPACE = "".join(map(chr, range(33)))


class _Unreadable:
    """A string that does not read as the type it is compared with: equal to nothing, ordered with nothing."""

    __slots__ = ()


_UNREADABLE = _Unreadable()


def _read_as(text: str, other: object) -> object:
    """``text`` read as ``other``'s type (ActiveMQ's ComparisonExpression with string conversion on)."""
    if isinstance(other, bool):
        return text.lower() == "true"  # Boolean.valueOf
    if isinstance(other, int):
        if _JAVA_LONG.fullmatch(text):
            value = int(text)
            if -_JAVA_LONG_MAX - 1 <= value <= _JAVA_LONG_MAX:
                return value
        return _UNREADABLE
    if isinstance(other, float):
        match = _JAVA_DOUBLE.fullmatch(text.strip(_JAVA_WHITESPACE))
        return _UNREADABLE if match is None else float(match.group(1))
    return text


def _converting(compare: Callable[[object, object], bool | None]) -> Callable[[object, object], bool | None]:
    """``compare``, after reading a string operand as the other operand's type when that is a number or a boolean."""

    def converted(left: object, right: object) -> bool | None:
        if isinstance(left, str):
            if right is not None and not isinstance(right, str):
                left = _read_as(left, right)
        elif isinstance(right, str) and left is not None:
            right = _read_as(right, left)
        return compare(left, right)

    return converted


_CONVERTING_ORDERINGS = {op: _converting(compare) for op, compare in _ORDERINGS.items()}
_CONVERTING_EQUAL = _converting(_equal)


def _not(value: bool | None) -> bool | None:
    return None if value is None else not value


def _all(values: Sequence[_Truth]) -> _Truth:
    def conjunction(lookup: Lookup) -> bool | None:
        unknown = False
        for value in values:
            result = value(lookup)
            if result is False:
                return False
            if result is None:
                unknown = True
        return None if unknown else True

    return conjunction


def _any(values: Sequence[_Truth]) -> _Truth:
    def disjunction(lookup: Lookup) -> bool | None:
        unknown = False
        for value in values:
            result = value(lookup)
            if result is True:
                return True
            if result is None:
                unknown = True
        return None if unknown else False

    return disjunction


# -- arithmetic -------------------------------------------------------------------------------------


def _plus(left: object, right: object) -> object:
    if isinstance(left, str) and isinstance(right, str):
        return left + right
    if _is_number(left) and _is_number(right):
        return left + right  # type: ignore[operator]
    return None


def _minus(left: object, right: object) -> object:
    return left - right if _is_number(left) and _is_number(right) else None  # type: ignore[operator]


def _times(left: object, right: object) -> object:
    return left * right if _is_number(left) and _is_number(right) else None  # type: ignore[operator]


def _as_doubles(left: object, right: object) -> tuple[float, float] | None:
    if not (_is_number(left) and _is_number(right)):
        return None
    try:
        return float(left), float(right)  # type: ignore[arg-type]
    except OverflowError:
        return None


def _divide(left: object, right: object) -> object:
    pair = _as_doubles(left, right)
    if pair is None:
        return None
    x, y = pair
    if y == 0.0:  # Java double division: no exception
        if x == 0.0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def _modulo(left: object, right: object) -> object:
    pair = _as_doubles(left, right)
    if pair is None:
        return None
    x, y = pair
    if y == 0.0 or math.isinf(x) or math.isnan(x) or math.isnan(y):
        return math.nan
    return math.fmod(x, y)


_ARITHMETIC: dict[str, Callable[[object, object], object]] = {
    "+": _plus,
    "-": _minus,
    "*": _times,
    "/": _divide,
    "%": _modulo,
}


def _like_pattern(pattern: str, escape: str | None) -> re.Pattern[str]:
    """Translate a LIKE pattern: ``%`` any run, ``_`` one character, escape + ``%``/``_``/escape literal."""
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if (
            escape is not None
            and c == escape
            and i + 1 < len(pattern)
            and pattern[i + 1] in ("%", "_", escape)
        ):
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.compile("".join(parts), re.DOTALL)


# ----------------------------------------------------------------------------------------------------
# Parser
# ----------------------------------------------------------------------------------------------------


class _Parser:
    """Recursive descent over the token list; one method per precedence level, loosest first."""

    def __init__(self, text: str, tokens: list[_Token], convert_strings: bool = False) -> None:
        self.text = text
        self.tokens = tokens
        self.index = 0
        self.identifiers: set[str] = set()
        # the comparisons this selector uses (convert_string_expressions: ones that read strings first)
        self.equal = _CONVERTING_EQUAL if convert_strings else _equal
        self.orderings = _CONVERTING_ORDERINGS if convert_strings else _ORDERINGS

    # -- token helpers

    def peek(self, offset: int = 0) -> _Token:
        return self.tokens[min(self.index + offset, len(self.tokens) - 1)]

    def at(self, text: str, offset: int = 0) -> bool:
        token = self.peek(offset)
        return token.kind in (_T.KEYWORD, _T.OP) and token.text == text

    def advance(self) -> _Token:
        token = self.peek()
        self.index += 1
        return token

    def expect(self, text: str, what: str) -> _Token:
        if not self.at(text):
            raise self.fail(f"expected {what} but found {self.peek().describe()}")
        return self.advance()

    def fail(self, reason: str, position: int | None = None) -> InvalidSelector:
        return _error(self.text, self.peek().position if position is None else position, reason)

    def string(self, what: str) -> str:
        token = self.peek()
        if token.kind is not _T.STRING:
            raise self.fail(f"expected a string literal {what} but found {token.describe()}")
        self.advance()
        assert isinstance(token.value, str)
        return token.value

    # -- type checks (ActiveMQ refuses these when parsing)

    def truth(self, node: _Node, where: str) -> _Truth:
        if node.truth is not None:
            return node.truth
        if node.kind is _K.PROPERTY:
            value = node.value

            def cast(lookup: Lookup) -> bool | None:
                result = value(lookup)
                if result is None:
                    return None
                return result if isinstance(result, bool) else False

            return cast
        raise self.fail(f"{node.kind.value} is not a condition ({where})", node.position)

    def check_ordered(self, node: _Node, op: str, position: int) -> None:
        if node.kind in (_K.STRING_LITERAL, _K.NULL, *_BOOLEANS):
            raise self.fail(f"{node.kind.value} cannot be compared with {op}", position)

    def check_equality(self, left: _Node, right: _Node, op: str, position: int) -> None:
        for node in (left, right):
            if node.kind is _K.NULL:
                raise self.fail(f"NULL cannot be compared with {op} (use IS NULL)", position)
        if (
            left.kind in _LITERALS
            and right.kind in _LITERALS
            and (left.kind is _K.BOOLEAN_LITERAL) != (right.kind is _K.BOOLEAN_LITERAL)
        ):
            raise self.fail(f"{left.kind.value} cannot be compared with {right.kind.value}", position)

    # -- grammar

    def parse(self) -> tuple[_Truth, frozenset[str]]:
        """The selector's condition and the identifiers it reads."""
        if self.peek().kind is _T.END:
            raise self.fail("the selector has no expression")
        node = self.or_expression()
        if self.peek().kind is not _T.END:
            raise self.fail(f"unexpected {self.peek().describe()}")
        return self.truth(node, "a selector must be a condition"), frozenset(self.identifiers)

    def or_expression(self) -> _Node:
        node = self.and_expression()
        if not self.at("OR"):
            return node
        operands = [self.truth(node, "left of OR")]
        while self.at("OR"):
            self.advance()
            operands.append(self.truth(self.and_expression(), "right of OR"))
        return _boolean(_any(operands), node.position)

    def and_expression(self) -> _Node:
        node = self.not_expression()
        if not self.at("AND"):
            return node
        operands = [self.truth(node, "left of AND")]
        while self.at("AND"):
            self.advance()
            operands.append(self.truth(self.not_expression(), "right of AND"))
        return _boolean(_all(operands), node.position)

    def not_expression(self) -> _Node:
        if not self.at("NOT"):
            return self.equality()
        position = self.advance().position
        operand = self.truth(self.not_expression(), "after NOT")

        def negation(lookup: Lookup) -> bool | None:
            return _not(operand(lookup))

        return _boolean(negation, position)

    def equality(self) -> _Node:
        node = self.comparison()
        while True:
            token = self.peek()
            if self.at("=") or self.at("<>"):
                self.advance()
                right = self.comparison()
                self.check_equality(node, right, token.text, token.position)
                node = self._equality_node(node, right, negate=token.text == "<>")
            elif self.at("IS"):
                self.advance()
                negate = self.at("NOT")
                if negate:
                    self.advance()
                self.expect("NULL", "NULL after IS" + (" NOT" if negate else ""))
                node = self._null_test(node, negate)
            else:
                return node

    def _equality_node(self, left: _Node, right: _Node, negate: bool) -> _Node:
        lv, rv, equal = left.value, right.value, self.equal
        if negate:

            def differs(lookup: Lookup) -> bool | None:
                return _not(equal(lv(lookup), rv(lookup)))

            return _boolean(differs, left.position)

        def equals(lookup: Lookup) -> bool | None:
            return equal(lv(lookup), rv(lookup))

        return _boolean(equals, left.position)

    @staticmethod
    def _null_test(node: _Node, negate: bool) -> _Node:
        value = node.value

        def is_null(lookup: Lookup) -> bool | None:
            return (value(lookup) is None) != negate

        return _boolean(is_null, node.position)

    def comparison(self) -> _Node:
        node = self.additive()
        while True:
            token = self.peek()
            if token.kind is _T.OP and token.text in _ORDERINGS:
                self.advance()
                right = self.additive()
                self.check_ordered(node, token.text, token.position)
                self.check_ordered(right, token.text, token.position)
                node = self._ordering_node(node, right, token.text)
                continue
            negate = self.at("NOT") and (self.at("LIKE", 1) or self.at("BETWEEN", 1) or self.at("IN", 1))
            if negate:
                self.advance()
                token = self.peek()
            if self.at("LIKE"):
                self.advance()
                node = self._like(node, negate)
            elif self.at("BETWEEN"):
                self.advance()
                node = self._between(node, negate, token.position)
            elif self.at("IN"):
                self.advance()
                node = self._in(node, negate, token.position)
            else:
                return node

    def _ordering_node(self, left: _Node, right: _Node, op: str) -> _Node:
        lv, rv, compare = left.value, right.value, self.orderings[op]

        def ordered(lookup: Lookup) -> bool | None:
            return compare(lv(lookup), rv(lookup))

        return _boolean(ordered, left.position)

    def _like(self, node: _Node, negate: bool) -> _Node:
        pattern_text = self.string("after LIKE")
        escape: str | None = None
        if self.at("ESCAPE"):
            position = self.advance().position
            escape = self.string("after ESCAPE")
            if len(escape) != 1:
                raise self.fail(f"the ESCAPE string must be one character, not {escape!r}", position)
        pattern = _like_pattern(pattern_text, escape)
        value = node.value

        def like(lookup: Lookup) -> bool | None:
            subject = value(lookup)
            if subject is None:
                return None
            result = isinstance(subject, str) and pattern.fullmatch(subject) is not None
            return result != negate

        return _boolean(like, node.position)

    def _between(self, node: _Node, negate: bool, position: int) -> _Node:
        low = self.additive()
        self.expect("AND", "AND in BETWEEN")
        high = self.additive()
        for operand in (node, low, high):
            self.check_ordered(operand, "BETWEEN", position)
        value, lo, hi = node.value, low.value, high.value
        orderings = self.orderings
        ge, le, lt, gt = orderings[">="], orderings["<="], orderings["<"], orderings[">"]

        def between(lookup: Lookup) -> bool | None:
            # ActiveMQ expands x BETWEEN a AND b to (x >= a AND x <= b), NOT BETWEEN to (x < a OR x > b).
            subject, low_value, high_value = value(lookup), lo(lookup), hi(lookup)
            if negate:
                first, second = lt(subject, low_value), gt(subject, high_value)
                if first is True or second is True:
                    return True
                return None if first is None or second is None else False
            first, second = ge(subject, low_value), le(subject, high_value)
            if first is False or second is False:
                return False
            return None if first is None or second is None else True

        return _boolean(between, node.position)

    def _in(self, node: _Node, negate: bool, position: int) -> _Node:
        if node.kind is not _K.PROPERTY:
            raise self.fail(f"IN needs a property on its left, not {node.kind.value}", position)
        self.expect("(", "'(' after IN")
        members = {self.string("in the IN list")}
        while self.at(","):
            self.advance()
            members.add(self.string("in the IN list"))
        self.expect(")", "',' or ')' in the IN list")
        choices = frozenset(members)
        value = node.value

        def within(lookup: Lookup) -> bool | None:
            subject = value(lookup)
            if not isinstance(subject, str):
                return None
            return (subject in choices) != negate

        return _boolean(within, node.position)

    def additive(self) -> _Node:
        node = self.multiplicative()
        while self.at("+") or self.at("-"):
            op = self.advance().text
            node = self._arithmetic(node, self.multiplicative(), op)
        return node

    def multiplicative(self) -> _Node:
        node = self.unary()
        while self.at("*") or self.at("/") or self.at("%"):
            op = self.advance().text
            node = self._arithmetic(node, self.unary(), op)
        return node

    @staticmethod
    def _arithmetic(left: _Node, right: _Node, op: str) -> _Node:
        lv, rv, apply = left.value, right.value, _ARITHMETIC[op]

        def arithmetic(lookup: Lookup) -> object:
            x = lv(lookup)
            if x is None:
                return None
            y = rv(lookup)
            return None if y is None else apply(x, y)

        return _Node(_K.VALUE, arithmetic, left.position)

    def unary(self) -> _Node:
        if self.at("+"):
            self.advance()
            return self.unary()
        if self.at("-"):
            position = self.advance().position
            operand = self.unary()
            if operand.kind is _K.NUMBER_LITERAL:
                number = operand.value(_no_lookup)
                assert isinstance(number, int | float)
                return _Node(_K.NUMBER_LITERAL, _constant(-number), position)
            value = operand.value

            def negated(lookup: Lookup) -> object:
                result = value(lookup)
                return -result if _is_number(result) else None  # type: ignore[operator]

            return _Node(_K.VALUE, negated, position)
        return self.primary()

    def primary(self) -> _Node:
        token = self.peek()
        if token.kind is _T.NUMBER:
            self.advance()
            return _Node(_K.NUMBER_LITERAL, _constant(token.value), token.position)
        if token.kind is _T.STRING:
            self.advance()
            return _Node(_K.STRING_LITERAL, _constant(token.value), token.position)
        if token.kind is _T.IDENT:
            self.advance()
            name = token.text
            self.identifiers.add(name)

            def read(lookup: Lookup) -> object:
                return lookup(name)

            return _Node(_K.PROPERTY, read, token.position)
        if self.at("TRUE") or self.at("FALSE"):
            self.advance()
            flag = token.text == "TRUE"

            def literal(lookup: Lookup) -> bool | None:
                return flag

            return _boolean(literal, token.position, _K.BOOLEAN_LITERAL)
        if self.at("NULL"):
            self.advance()
            return _Node(_K.NULL, _constant(None), token.position)
        if self.at("("):
            self.advance()
            node = self.or_expression()
            self.expect(")", "')'")
            return node
        raise self.fail(f"expected a value but found {token.describe()}")


def _no_lookup(name: str) -> object:  # pragma: no cover - constants never look anything up
    raise AssertionError(name)
