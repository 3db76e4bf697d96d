"""What a parsed selector does with values: comparisons, SQL three-valued logic and Java arithmetic.

The parser builds a tree of small closures out of these; matching only calls them. ``None`` is SQL's NULL
(and *unknown* for conditions). Arithmetic that Java refuses (a string times two) raises
:class:`EvaluationFailed`, which ends the whole evaluation: the message is not selected, as in ActiveMQ.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from minibroker._java.values import is_number, java_string, parse_double, parse_long

#: How a selector reads a message: identifier -> header or property value, or None when absent.
Lookup = Callable[[str], object]

Value = Callable[[Lookup], object]
Truth = Callable[[Lookup], bool | None]
Compare = Callable[[object, object], bool | None]


class EvaluationFailed(Exception):
    """Java would throw here (ActiveMQ's ``Cannot convert value ... into a number``): the message is not selected."""

    def __init__(self, reason: str, value: object) -> None:
        super().__init__(reason)
        self.value = value


def constant(value: object) -> Value:
    def constant_value(lookup: Lookup) -> object:
        return value

    return constant_value


# -- comparisons ------------------------------------------------------------------------------------


def equal(left: object, right: object) -> bool | None:
    if left is None or right is None:
        return None
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if is_number(left) and is_number(right):
        return bool(left == right)
    if type(left) is type(right) or (isinstance(left, str) and isinstance(right, str)):
        return bool(left == right)
    return False


def _ordering(compare: Callable[[Any, Any], bool]) -> Compare:
    def ordered(left: object, right: object) -> bool | None:
        if left is None or right is None:
            return None
        if isinstance(left, bool) or isinstance(right, bool):
            return False
        if (is_number(left) and is_number(right)) or (isinstance(left, str) and isinstance(right, str)):
            return bool(compare(left, right))
        return False

    return ordered


ORDERINGS = {
    ">": _ordering(operator.gt),
    ">=": _ordering(operator.ge),
    "<": _ordering(operator.lt),
    "<=": _ordering(operator.le),
}

# -- convert_string_expressions ---------------------------------------------------------------------


class _Unreadable:
    """A string that does not read as the type it is compared with: equal to nothing, ordered with nothing."""

    __slots__ = ()


_UNREADABLE = _Unreadable()


def _read_as(text: str, other: object) -> object:
    """``text`` read as ``other``'s type (ActiveMQ's ComparisonExpression with string conversion on)."""
    if isinstance(other, bool):
        return text.lower() == "true"  # Boolean.valueOf
    if isinstance(other, int):
        number: object = parse_long(text)
    elif isinstance(other, float):
        number = parse_double(text)
    else:
        return text
    return _UNREADABLE if number is None else number


def _converting(compare: Compare) -> Compare:
    """``compare``, after reading a string operand as the other operand's type when that is a number or a boolean."""

    def converted(left: object, right: object) -> bool | None:
        if isinstance(left, str):
            if right is not None and not isinstance(right, str):
                left = _read_as(left, right)
        elif isinstance(right, str) and left is not None:
            right = _read_as(right, left)
        return compare(left, right)

    return converted


CONVERTING_ORDERINGS = {op: _converting(compare) for op, compare in ORDERINGS.items()}
CONVERTING_EQUAL = _converting(equal)

# -- logic ------------------------------------------------------------------------------------------


def sql_not(value: bool | None) -> bool | None:
    return None if value is None else not value


def all_of(values: Sequence[Truth]) -> Truth:
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


def any_of(values: Sequence[Truth]) -> Truth:
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


# -- arithmetic (operands are never None here: NULL in, NULL out is handled by the caller) -----------


def _number(value: object) -> int | float:
    """Java's ``asNumber``: a number passes, anything else fails the evaluation."""
    if is_number(value):
        assert isinstance(value, int | float)
        return value
    raise EvaluationFailed(f"Cannot convert value: {value!r} into a number", value)


def _plus(left: object, right: object) -> object:
    if isinstance(left, str):  # Java: a string plus anything is a concatenation
        text = java_string(right)
        if text is None:
            raise EvaluationFailed(f"cannot append {right!r} to a string", right)
        return left + text
    return _number(left) + _number(right)


def _minus(left: object, right: object) -> object:
    return _number(left) - _number(right)


def _times(left: object, right: object) -> object:
    return _number(left) * _number(right)


def _as_doubles(left: object, right: object) -> tuple[float, float]:
    x, y = _number(left), _number(right)
    try:
        return float(x), float(y)
    except OverflowError:  # only a Python int past any Java long gets here
        raise EvaluationFailed("a number outside Java's long range", x if abs(x) > abs(y) else y) from None


def _divide(left: object, right: object) -> object:
    x, y = _as_doubles(left, right)
    if y == 0.0:  # Java double division: no exception
        if x == 0.0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def _modulo(left: object, right: object) -> object:
    x, y = _as_doubles(left, right)
    if y == 0.0 or math.isinf(x) or math.isnan(x) or math.isnan(y):
        return math.nan
    return math.fmod(x, y)


ARITHMETIC: dict[str, Callable[[object, object], object]] = {
    "+": _plus,
    "-": _minus,
    "*": _times,
    "/": _divide,
    "%": _modulo,
}
