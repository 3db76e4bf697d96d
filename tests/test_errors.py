"""The error tree: every value an error carries is a declared field; classes nothing raises are gone."""

from __future__ import annotations

import pytest

from minibroker import errors
from minibroker.errors import (
    ConsumerClosed,
    FrameTooLarge,
    InvalidConfiguration,
    InvalidSelector,
    MinibrokerError,
    SettleTimeout,
)


class TestFields:
    def test_declared_fields_are_attributes(self) -> None:
        error = InvalidSelector("bad", selector="a =", position=3, reason="expected a value")
        assert (error.selector, error.position, error.reason, error.limit) == ("a =", 3, "expected a value", None)
        assert error.message == str(error) == "bad"

    def test_fields_are_inherited(self) -> None:
        assert set(ConsumerClosed.fields()) >= {"consumer_id", "session_id", "connection_id"}
        assert {"size", "maximum"} <= set(FrameTooLarge.fields())

    def test_an_undeclared_field_is_refused(self) -> None:
        with pytest.raises(TypeError, match="InvalidSelector has no field 'colour'"):
            InvalidSelector("bad", colour="red")

    def test_every_error_builds_from_a_message_alone(self) -> None:
        """The wire turns an error frame back into its class with only the message."""
        for name in errors.__all__:
            cls = getattr(errors, name)
            error = cls("text")
            assert isinstance(error, MinibrokerError) and error.message == "text"
            assert all(getattr(error, field) is None for field in cls.fields())


class TestInvalidConfiguration:
    def test_option_and_value(self) -> None:
        error = InvalidConfiguration("bad", option="window", value=0)
        assert (error.option, error.value) == ("window", 0)

    def test_naming_the_option_by_keyword(self) -> None:
        error = InvalidConfiguration("bad", window=0)
        assert (error.option, error.value) == ("window", 0)

    def test_several_options_at_once(self) -> None:
        error = InvalidConfiguration("bad", from_seq=5, to_seq=2)
        assert (error.option, error.value) == ("from_seq, to_seq", (5, 2))

    def test_not_both_forms(self) -> None:
        with pytest.raises(TypeError):
            InvalidConfiguration("bad", option="window", window=0)


def test_settle_timeout_is_a_timeout_error() -> None:
    error = SettleTimeout("late", pending=["q: 1 message"])
    assert isinstance(error, TimeoutError) and error.pending == ["q: 1 message"]


@pytest.mark.parametrize("name", ["DestinationNotFound", "ReceiveTimeout"])
def test_classes_nothing_raised_are_gone(name: str) -> None:
    assert not hasattr(errors, name)
