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
* Arithmetic is Java's: a string plus anything concatenates (``'a' + 1`` is ``'a1'``); any other arithmetic on a
  string or a boolean throws in Java, which makes the whole selector fail for that message. A selector that fails
  on a message does not select it, and nothing else changes: other consumers still get it (ActiveMQ logs
  "Selector failed to evaluate" and treats it as no match). Negating a non-number gives NULL.
* ``LIKE`` matches in time linear in the value (see ``_like``), whatever the pattern.
* A selector longer than :func:`max_selector_length` characters (64 KiB by default; ActiveMQ has no limit, but
  one client must not be able to stall the broker) is refused with ``InvalidSelector`` naming the limit.
* A selector starting with ``convert_string_expressions:`` (what ActiveMQ's STOMP connector puts before every
  SUBSCRIBE selector, since STOMP headers are all strings) reads a string compared with a number or a boolean
  (``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``) as that type first, with Java's ``valueOf`` rules: so
  ``x = 5`` and ``x > 4`` select a message whose ``x`` is ``"5"``. A string that does not read (``"5.0"`` against an
  integer, ``"abc"``) is neither equal nor ordered. ``IN``, ``LIKE`` and arithmetic never convert.
"""

from __future__ import annotations

import functools

import attrs

from minibroker.errors import InvalidConfiguration, InvalidSelector

from ._parser import Parser
from ._tokens import selector_error, tokenize
from ._values import Lookup, Truth

__all__ = [
    "CONVERT_STRINGS_PREFIX",
    "DEFAULT_MAX_SELECTOR_LENGTH",
    "Lookup",
    "Selector",
    "max_selector_length",
    "parse_selector",
    "set_max_selector_length",
]

#: ActiveMQ's parser prefix for selectors whose comparisons read strings as numbers or booleans
CONVERT_STRINGS_PREFIX = "convert_string_expressions:"

#: The longest selector accepted, in characters, unless :func:`set_max_selector_length` says otherwise.
#: Generous (real selectors are a few hundred characters) yet parsed in well under a second.
DEFAULT_MAX_SELECTOR_LENGTH = 64 * 1024

_max_length = DEFAULT_MAX_SELECTOR_LENGTH


def max_selector_length() -> int:
    """The longest selector, in characters, that consumers may use now."""
    return _max_length


def set_max_selector_length(limit: int) -> int:
    """Change the longest selector accepted from now on, for every broker in this process; returns the old limit
    (so a test can put it back). Selectors already parsed keep working."""
    global _max_length
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidConfiguration(
            f"a selector length limit is an integer >= 1, not {limit!r}", option="max_selector_length", value=limit
        )
    previous, _max_length = _max_length, limit
    return previous


@attrs.frozen
class Selector:
    """A parsed selector. Immutable and hashable: one instance serves every consumer with the same text."""

    text: str
    _truth: Truth = attrs.field(eq=False, repr=False)
    #: the identifiers the selector reads, so a caller can tell which headers it needs
    identifiers: frozenset[str] = frozenset()

    @property
    def match_all(self) -> bool:
        """True for an empty selector, which JMS treats as no selector at all."""
        return not self.text.removeprefix(CONVERT_STRINGS_PREFIX).strip()

    def evaluate(self, lookup: Lookup) -> bool | None:
        """The three-valued result: True, False, or None for unknown (which does not select the message).

        A selector that fails on this message (Java would throw: ``'abc' * 2``) is None too: it does not select it.
        """
        try:
            return self._truth(lookup)
        except Exception:  # a failing selector is its own consumer's problem, never the sender's or the broker's
            return None

    def matches(self, lookup: Lookup) -> bool:
        """Whether a message whose headers and properties ``lookup`` returns is selected."""
        try:
            return self._truth(lookup) is True
        except Exception:  # as in evaluate: no match, and dispatch to the other consumers goes on
            return False


def parse_selector(text: str) -> Selector:
    """Parse and check a selector; a blank one matches everything.

    Raises :class:`InvalidSelector` with ``selector`` (the text), ``position`` (0-based offset of the problem)
    and ``reason``; a selector over :func:`max_selector_length` also carries ``limit``. Results are cached, since
    many consumers tend to share a few selectors.
    """
    if not isinstance(text, str):
        raise InvalidSelector(f"a selector must be a string, not {type(text).__name__}", selector=text)
    if len(text) > _max_length:
        raise InvalidSelector(
            f"a selector of {len(text)} characters is longer than the limit of {_max_length}",
            selector=text,
            position=_max_length,
            reason="too long",
            limit=_max_length,
        )
    return _parse_cached(text)


@functools.lru_cache(maxsize=512)
def _parse_cached(text: str) -> Selector:
    body = text.removeprefix(CONVERT_STRINGS_PREFIX)
    if not body.strip():
        return Selector(text, _always_true)
    # positions in errors count from the expression itself, after any prefix
    try:
        parser = Parser(body, tokenize(body), convert_strings=body is not text)
        truth, identifiers = parser.parse()
    except RecursionError:
        raise selector_error(body, 0, "the expression is nested too deeply") from None
    return Selector(text, truth, identifiers)


def _always_true(lookup: Lookup) -> bool | None:
    return True
