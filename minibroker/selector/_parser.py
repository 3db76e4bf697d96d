"""The selector parser: recursive descent over the tokens, building a tree of closures with ActiveMQ's
parse-time type checks (``x > 'a'``, ``x = NULL``, ``TRUE = 1`` are refused before any message is seen)."""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs

from minibroker._java.values import is_number
from minibroker.errors import InvalidSelector

from ._like import compile_like
from ._tokens import Token, selector_error
from ._tokens import TokenKind as _T
from ._values import (
    ARITHMETIC,
    CONVERTING_EQUAL,
    CONVERTING_ORDERINGS,
    ORDERINGS,
    Lookup,
    Truth,
    Value,
    all_of,
    any_of,
    constant,
    equal,
    sql_not,
)

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
    value: Value
    position: int
    truth: Truth | None = None


def _boolean(truth: Truth, position: int, kind: _K = _K.BOOLEAN) -> _Node:
    return _Node(kind, truth, position, truth)


# ----------------------------------------------------------------------------------------------------
# Parser
# ----------------------------------------------------------------------------------------------------


class Parser:
    """Recursive descent over the token list; one method per precedence level, loosest first."""

    def __init__(self, text: str, tokens: list[Token], convert_strings: bool = False) -> None:
        self.text = text
        self.tokens = tokens
        self.index = 0
        self.identifiers: set[str] = set()
        # the comparisons this selector uses (convert_string_expressions: ones that read strings first)
        self.equal = CONVERTING_EQUAL if convert_strings else equal
        self.orderings = CONVERTING_ORDERINGS if convert_strings else ORDERINGS

    # -- token helpers

    def peek(self, offset: int = 0) -> Token:
        index = self.index + offset
        tokens = self.tokens
        return tokens[index] if index < len(tokens) else tokens[-1]

    def at(self, text: str, offset: int = 0) -> bool:
        # keywords and operators are the only tokens whose text can equal a keyword or operator text
        # (identifiers that spell a keyword became keywords; strings keep their quotes)
        return self.peek(offset).text == text

    def advance(self) -> Token:
        token = self.peek()
        self.index += 1
        return token

    def expect(self, text: str, what: str) -> Token:
        if not self.at(text):
            raise self.fail(f"expected {what} but found {self.peek().describe()}")
        return self.advance()

    def fail(self, reason: str, position: int | None = None) -> InvalidSelector:
        return selector_error(self.text, self.peek().position if position is None else position, reason)

    def string(self, what: str) -> str:
        token = self.peek()
        if token.kind is not _T.STRING:
            raise self.fail(f"expected a string literal {what} but found {token.describe()}")
        self.advance()
        assert isinstance(token.value, str)
        return token.value

    # -- type checks (ActiveMQ refuses these when parsing)

    def truth(self, node: _Node, where: str) -> Truth:
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

    def parse(self) -> tuple[Truth, frozenset[str]]:
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
        return _boolean(any_of(operands), node.position)

    def and_expression(self) -> _Node:
        node = self.not_expression()
        if not self.at("AND"):
            return node
        operands = [self.truth(node, "left of AND")]
        while self.at("AND"):
            self.advance()
            operands.append(self.truth(self.not_expression(), "right of AND"))
        return _boolean(all_of(operands), node.position)

    def not_expression(self) -> _Node:
        if not self.at("NOT"):
            return self.equality()
        position = self.advance().position
        operand = self.truth(self.not_expression(), "after NOT")

        def negation(lookup: Lookup) -> bool | None:
            return sql_not(operand(lookup))

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
                return sql_not(equal(lv(lookup), rv(lookup)))

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
            if token.kind is _T.OP and token.text in ORDERINGS:
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
        pattern = compile_like(pattern_text, escape)
        value = node.value

        def like(lookup: Lookup) -> bool | None:
            subject = value(lookup)
            if subject is None:
                return None
            result = isinstance(subject, str) and pattern.matches(subject)
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
        return self._chain(self.multiplicative, ("+", "-"))

    def multiplicative(self) -> _Node:
        return self._chain(self.unary, ("*", "/", "%"))

    def _chain(self, operand: Callable[[], _Node], operators: tuple[str, ...]) -> _Node:
        """``a + b - c ...``, left-associative, as one loop rather than nested calls, so a long chain evaluates
        without deep recursion."""
        first = operand()
        steps: list[tuple[Callable[[object, object], object], Value]] = []
        while self.peek().kind is _T.OP and self.peek().text in operators:
            apply = ARITHMETIC[self.advance().text]
            steps.append((apply, operand().value))
        if not steps:
            return first
        head = first.value

        def arithmetic(lookup: Lookup) -> object:
            result = head(lookup)
            for apply, value in steps:
                if result is None:
                    return None
                right = value(lookup)
                if right is None:
                    return None
                result = apply(result, right)
            return result

        return _Node(_K.VALUE, arithmetic, first.position)

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
                return _Node(_K.NUMBER_LITERAL, constant(-number), position)
            value = operand.value

            def negated(lookup: Lookup) -> object:
                result = value(lookup)
                return -result if is_number(result) else None  # type: ignore[operator]

            return _Node(_K.VALUE, negated, position)
        return self.primary()

    def primary(self) -> _Node:
        token = self.peek()
        if token.kind is _T.NUMBER:
            self.advance()
            return _Node(_K.NUMBER_LITERAL, constant(token.value), token.position)
        if token.kind is _T.STRING:
            self.advance()
            return _Node(_K.STRING_LITERAL, constant(token.value), token.position)
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
            return _Node(_K.NULL, constant(None), token.position)
        if self.at("("):
            self.advance()
            node = self.or_expression()
            self.expect(")", "')'")
            return node
        raise self.fail(f"expected a value but found {token.describe()}")


def _no_lookup(name: str) -> object:  # pragma: no cover - constants never look anything up
    raise AssertionError(name)
