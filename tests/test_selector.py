"""JMS message selectors: ActiveMQ's SQL-92 subset, three-valued logic, and parse errors with positions."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minibroker.errors import InvalidConfiguration, InvalidSelector
from minibroker.selector import (
    DEFAULT_MAX_SELECTOR_LENGTH,
    Selector,
    max_selector_length,
    parse_selector,
    set_max_selector_length,
)

MESSAGE: dict[str, object] = {
    "i": 5,
    "big": 2**40,
    "x": 2.5,
    "s": "abc",
    "t": True,
    "f": False,
    "color": "red",
    "JMSPriority": 4,
    "JMSType": "car",
    "under_score$": "ok",
    "text": "50% off_now",
    "lines": "a\nb",
}


def evaluate(text: str, message: dict[str, object] | None = None) -> bool | None:
    values = MESSAGE if message is None else message
    return parse_selector(text).evaluate(values.get)


def matches(text: str, message: dict[str, object] | None = None) -> bool:
    values = MESSAGE if message is None else message
    return parse_selector(text).matches(values.get)


class TestLiterals:
    """Strings, ActiveMQ's integer forms, floats and booleans."""

    @pytest.mark.parametrize(
        "text",
        [
            "s = 'abc'",
            "'it''s' = 'it' + '''s'",
            "i = 5",
            "i = 5L",
            "i = 5l",
            "i = 0x5",
            "i = 0X05",
            "i = 05",
            "big = 1099511627776",
            "x = 2.5",
            "x = 25e-1",
            "x = 0.25E1",
            "x = 2.50",
            "i = 5.",
            "x * 2 = 5",
            ".5 = 0.5",
            "t = TRUE",
            "f = FALSE",
            "TRUE",
            "NOT FALSE",
        ],
    )
    def test_true(self, text: str) -> None:
        """Each literal form compares equal to the value it denotes."""
        assert evaluate(text) is True

    def test_octal_is_octal(self) -> None:
        """A leading zero means octal, as in ActiveMQ: 010 is 8."""
        assert matches("i + 3 = 010")

    def test_hex_too_large(self) -> None:
        """Hex literals must fit a Java long."""
        with pytest.raises(InvalidSelector):
            parse_selector("i = 0x10000000000000000")


class TestComparison:
    """= <> < > <= >= with ActiveMQ's type rules."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("i = 5", True),
            ("i <> 5", False),
            ("i <> 4", True),
            ("i < 6", True),
            ("i < 5", False),
            ("i <= 5", True),
            ("i > 4", True),
            ("i > 5", False),
            ("i >= 5", True),
            ("x > i", False),
            ("x < i", True),
            ("i = 5.0", True),
            ("JMSPriority >= 4", True),
            ("color = 'red'", True),
            ("color = 'RED'", False),
            ("color <> 'blue'", True),
            ("t = TRUE", True),
            ("t <> f", True),
            ("color > JMSType", True),
        ],
    )
    def test_operators(self, text: str, expected: bool) -> None:
        """Numbers compare across int and float; strings by value."""
        assert evaluate(text) is expected

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("s = 5", False),
            ("s <> 5", True),
            ("s > i", False),
            ("s < i", False),
            ("t = 1", False),
            ("t > f", False),
            ("i = color", False),
        ],
    )
    def test_mixed_types(self, text: str, expected: bool) -> None:
        """Different types are unequal and unordered (false, not an error); <> is NOT = as in ActiveMQ."""
        assert evaluate(text) is expected

    @pytest.mark.parametrize("text", ["missing = 5", "missing <> 5", "missing > 1", "5 < missing"])
    def test_missing_is_unknown(self, text: str) -> None:
        """An absent property is NULL: comparisons are unknown and do not select."""
        assert evaluate(text) is None
        assert not matches(text)

    def test_case_sensitive_identifiers(self) -> None:
        """Identifiers are case-sensitive: Color is not color."""
        assert evaluate("Color = 'red'") is None


class TestArithmetic:
    """+ - * / % and unary signs, with Java number semantics."""

    @pytest.mark.parametrize(
        "text",
        [
            "i + 1 = 6",
            "i - 6 = -1",
            "i * 2 = 10",
            "i / 2 = 2.5",
            "i % 3 = 2",
            "-i = -5",
            "+i = 5",
            "- -i = 5",
            "1 + 2 * 3 = 7",
            "(1 + 2) * 3 = 9",
            "10 - 2 - 3 = 5",
            "i * x = 12.5",
            "big * 2 = 2199023255552",
            "i / 0 > 1000000",
            "-i / 0 < -1000000",
            "'a' + 'b' = 'ab'",
        ],
    )
    def test_true(self, text: str) -> None:
        """Precedence and left associativity as in SQL; division is a double division."""
        assert evaluate(text) is True

    def test_zero_by_zero(self) -> None:
        """0 / 0 is NaN, which equals nothing."""
        assert evaluate("0 / 0 = 0") is False
        assert evaluate("0 / 0 <> 0 / 0") is True

    @pytest.mark.parametrize("text", ["-s = 1", "missing + 1 = 1", "1 - missing = 1"])
    def test_null_and_negated_strings_are_unknown(self, text: str) -> None:
        """NULL in, NULL out; ActiveMQ negates only numbers and gives NULL for the rest."""
        assert evaluate(text) is None

    @pytest.mark.parametrize(
        "text", ["s + 1 = 'abc1'", "s + x = 'abc2.5'", "s + t = 'abctrue'", "s + 1e7 = 'abc1.0E7'", "s + s = 'abcabc'"]
    )
    def test_a_string_plus_anything_concatenates_as_java_does(self, text: str) -> None:
        assert evaluate(text) is True

    @pytest.mark.parametrize(
        "text",
        ["s * 2 = 2", "t * 2 = 2", "1 + s = 1", "t + 1 = 2", "s - 1 = 1", "i / s = 1", "s % 2 = 1", "i + s = 1"],
    )
    def test_other_arithmetic_on_non_numbers_fails_the_whole_selector(self, text: str) -> None:
        """Java throws "Cannot convert value ... into a number": the message is not selected, even under OR TRUE
        or NOT, and nothing is raised to the caller."""
        for selector in (text, f"{text} OR TRUE", f"NOT ({text})"):
            assert evaluate(selector) is None
            assert not matches(selector)

    def test_a_number_no_double_holds_fails_instead_of_raising(self) -> None:
        assert not matches("big + 1.0 > 0", {"big": 10**400})
        assert not matches("big / 2 > 0 OR TRUE", {"big": 10**400})

    def test_a_failing_lookup_is_no_match(self) -> None:
        """Whatever goes wrong while evaluating stays inside the selector."""

        def broken(name: str) -> object:
            raise KeyError(name)

        assert not parse_selector("a = 1 OR TRUE").matches(broken)


class TestLogic:
    """AND / OR / NOT with SQL three-valued logic; t, f are true/false properties, u is absent."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("t AND t", True),
            ("t AND f", False),
            ("t AND u", None),
            ("f AND u", False),
            ("u AND f", False),
            ("u AND u", None),
            ("t OR f", True),
            ("f OR f", False),
            ("t OR u", True),
            ("u OR t", True),
            ("f OR u", None),
            ("u OR u", None),
            ("NOT t", False),
            ("NOT f", True),
            ("NOT u", None),
            ("NOT NOT t", True),
            ("f OR t AND f", False),
            ("(f OR t) AND f", False),
            ("f AND f OR t", True),
        ],
    )
    def test_truth_table(self, text: str, expected: bool | None) -> None:
        """Unknown absorbs like SQL NULL; AND binds tighter than OR."""
        assert evaluate(text, {"t": True, "f": False}) is expected

    def test_not_binds_looser_than_comparison(self) -> None:
        """NOT i = 4 is NOT (i = 4), as the JMS specification reads."""
        assert evaluate("NOT i = 4") is True
        assert evaluate("NOT i = 5 OR t") is True

    def test_non_boolean_property_in_condition(self) -> None:
        """A property used as a condition is false unless it holds a boolean (ActiveMQ's boolean cast)."""
        assert evaluate("s") is False
        assert evaluate("t AND s") is False

    def test_long_chains_do_not_recurse(self) -> None:
        """Thousands of ORs evaluate without hitting Python's recursion limit."""
        text = " OR ".join(f"i = {n}" for n in range(3000, 0, -1))
        assert matches(text)


class TestBetweenAndIn:
    """BETWEEN is inclusive; IN takes string literals only."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("i BETWEEN 5 AND 6", True),
            ("i BETWEEN 1 AND 5", True),
            ("i BETWEEN 6 AND 10", False),
            ("x BETWEEN 2 AND 3", True),
            ("i NOT BETWEEN 6 AND 10", True),
            ("i NOT BETWEEN 1 AND 10", False),
            ("missing BETWEEN 1 AND 10", None),
            ("missing NOT BETWEEN 1 AND 10", None),
            ("i BETWEEN missing AND 4", False),
            ("i + 1 BETWEEN 2 * 3 AND 7", True),
            ("i BETWEEN 1 AND 10 AND t", True),
            ("color IN ('red', 'green')", True),
            ("color IN ('blue')", False),
            ("color NOT IN ('blue', 'green')", True),
            ("color NOT IN ('red')", False),
            ("missing IN ('red')", None),
            ("missing NOT IN ('red')", None),
            ("i IN ('5')", None),
        ],
    )
    def test_cases(self, text: str, expected: bool | None) -> None:
        """NULL operands make the test unknown; a non-string value is never IN a string list."""
        assert evaluate(text) is expected


class TestLike:
    """LIKE with % and _, ESCAPE, and no regex leaking through."""

    @pytest.mark.parametrize(
        ("pattern", "value", "expected"),
        [
            ("'a%'", "abc", True),
            ("'%c'", "abc", True),
            ("'%b%'", "abc", True),
            ("'a_c'", "abc", True),
            ("'a_c'", "ac", False),
            ("'%'", "", True),
            ("'abc'", "abcd", False),
            ("'a.c'", "abc", False),
            ("'a.c'", "a.c", True),
            ("'(a)[b]*+?^$|\\'", "(a)[b]*+?^$|\\", True),
            ("'a%b'", "a\nb", True),
            ("'A%'", "abc", False),
        ],
    )
    def test_wildcards(self, pattern: str, value: str, expected: bool) -> None:
        """% matches any run (newlines too), _ one character; the rest is literal and case-sensitive."""
        assert evaluate(f"v LIKE {pattern}", {"v": value}) is expected

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("text LIKE '50\\% off%' ESCAPE '\\'", True),
            ("text LIKE '5\\%%' ESCAPE '\\'", False),
            ("text LIKE '%off\\_now' ESCAPE '\\'", True),
            ("text LIKE '%off!_now' ESCAPE '!'", True),
            ("text LIKE '%off!_n_w' ESCAPE '!'", True),
            ("text LIKE '%!_!_%' ESCAPE '!'", False),
            ("s LIKE 'a!bc' ESCAPE '!'", False),
            ("s LIKE 'a!!bc' ESCAPE '!'", False),
            ("v LIKE 'a!!b' ESCAPE '!'", True),
        ],
    )
    def test_escape(self, text: str, expected: bool) -> None:
        """The escape character makes the next %, _ or itself literal."""
        assert evaluate(text, {**MESSAGE, "v": "a!b"}) is expected

    def test_not_like_and_null(self) -> None:
        """NOT LIKE is the complement for strings; NULL stays unknown."""
        assert evaluate("s NOT LIKE 'x%'") is True
        assert evaluate("s NOT LIKE 'a%'") is False
        assert evaluate("missing LIKE 'a%'") is None
        assert evaluate("missing NOT LIKE 'a%'") is None

    def test_non_string(self) -> None:
        """LIKE on a number is false, not an error (ActiveMQ)."""
        assert evaluate("i LIKE '5'") is False

    @given(
        pattern=st.text(alphabet="ab%_!", max_size=12),
        value=st.text(alphabet="ab%_!\n", max_size=12),
        escape=st.sampled_from([None, "!"]),
    )
    def test_agrees_with_the_regular_expression_activemq_builds(
        self, pattern: str, value: str, escape: str | None
    ) -> None:
        """Same answers as ActiveMQ's own translation (``%`` to ``.*?``, ``_`` to ``.``), which backtracks."""
        clause = f" ESCAPE '{escape}'" if escape else ""
        assert evaluate(f"v LIKE '{pattern}'{clause}", {"v": value}) is (
            re.fullmatch(like_regex(pattern, escape), value, re.DOTALL) is not None
        )

    @pytest.mark.parametrize(
        "pattern",
        ["%a%a%b", "%a%a%a%a%a%a%a%a%a%a%b", "%a_a_a_%a_a_b%", "a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%b"],
    )
    def test_no_pattern_makes_a_long_value_slow(self, pattern: str) -> None:
        """Patterns on which a backtracking regex takes minutes to hours for 10 kB (``%a%a%b``: 109 s) are answered
        by scanning the value once per piece; this test would not finish with the old matcher."""
        assert evaluate(f"v LIKE '{pattern}'", {"v": "a" * 10_000}) is False
        assert evaluate(f"v LIKE '{pattern}'", {"v": "a" * 10_000 + "b"}) is True


def like_regex(pattern: str, escape: str | None) -> str:
    """ActiveMQ's LikeExpression translation, as the reference the linear matcher must agree with."""
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if escape is not None and c == escape and i + 1 < len(pattern) and pattern[i + 1] in ("%", "_", escape):
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append(".*?" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return "".join(parts)


class TestLimits:
    """No selector can stall the broker: its length is capped, deep nesting is refused, parsing is linear."""

    def test_the_default_limit_is_64_kib(self) -> None:
        assert max_selector_length() == DEFAULT_MAX_SELECTOR_LENGTH == 65_536

    def test_the_longest_accepted_selector_parses(self) -> None:
        clause = "(a = 1 OR b LIKE 'x%') AND "
        text = (clause * (DEFAULT_MAX_SELECTOR_LENGTH // len(clause)))[: -len(" AND ")]
        text += " " * (DEFAULT_MAX_SELECTOR_LENGTH - len(text))
        assert len(text) == DEFAULT_MAX_SELECTOR_LENGTH
        assert matches(text, {"a": 1})

    def test_one_character_more_is_refused_naming_the_limit(self) -> None:
        text = "a = '" + "x" * (DEFAULT_MAX_SELECTOR_LENGTH - 6) + "'"
        assert len(text) == DEFAULT_MAX_SELECTOR_LENGTH
        assert parse_selector(text).identifiers == {"a"}
        with pytest.raises(InvalidSelector) as caught:
            parse_selector(text + " ")
        assert caught.value.limit == DEFAULT_MAX_SELECTOR_LENGTH
        assert "65536" in str(caught.value)

    def test_the_limit_can_be_changed_and_put_back(self) -> None:
        previous = set_max_selector_length(10)
        try:
            parse_selector("a = 12345")
            with pytest.raises(InvalidSelector) as caught:
                parse_selector("a = 1234567")
            assert caught.value.limit == 10
        finally:
            assert set_max_selector_length(previous) == 10
        parse_selector("a = 1234567")

    @pytest.mark.parametrize("limit", [0, -1, 1.5, True, "10"])
    def test_a_limit_is_a_positive_integer(self, limit: object) -> None:
        with pytest.raises(InvalidConfiguration) as caught:
            set_max_selector_length(limit)  # type: ignore[arg-type]
        assert caught.value.value == limit
        assert max_selector_length() == DEFAULT_MAX_SELECTOR_LENGTH

    def test_deep_nesting_is_refused_not_crashing(self) -> None:
        with pytest.raises(InvalidSelector, match="nested too deeply"):
            parse_selector("(" * 20_000 + "a = 1" + ")" * 20_000)

    def test_a_long_arithmetic_chain_evaluates(self) -> None:
        """A chain of + fits in the limit and is evaluated in a loop, not one nested call per term."""
        assert matches("a = " + " + ".join(["1"] * 15_000), {"a": 15_000})
        assert evaluate("a = 1 - " + " - ".join(["1"] * 15_000), {"a": 1 - 15_000}) is True

    def test_many_line_comments_parse(self) -> None:
        """Each -- comment ends at its own line: 6 000 of them are read once, not once per comment."""
        assert matches("a = 1" + " -- note\n" * 6_000, {"a": 1})


class TestNull:
    """IS NULL / IS NOT NULL are the only ways to test for absence."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("missing IS NULL", True),
            ("missing IS NOT NULL", False),
            ("i IS NULL", False),
            ("i IS NOT NULL", True),
            ("missing + 1 IS NULL", True),
            ("(missing = 1) IS NULL", True),
            ("NOT missing IS NULL", False),
        ],
    )
    def test_cases(self, text: str, expected: bool) -> None:
        """Never unknown: the test is about the NULL itself."""
        assert evaluate(text) is expected


class TestSyntax:
    """Keywords, comments, empty selectors, caching."""

    def test_keywords_case_insensitive(self) -> None:
        """Keywords may be written in any case."""
        assert matches("i between 1 and 9 And color in ('red') oR not t iS nUlL")
        assert matches("s like 'a%' escape '!' AND missing Is Null AND t = true")

    def test_identifier_characters(self) -> None:
        """Identifiers may use letters, digits, _ and $ (not first digit)."""
        assert matches("under_score$ = 'ok'")
        assert parse_selector("$a = 1 OR _b = 2").identifiers == frozenset({"$a", "_b"})

    def test_identifiers_listed(self) -> None:
        """A selector tells which headers and properties it reads."""
        assert parse_selector("JMSType = 'car' AND JMSPriority > 4").identifiers == {"JMSType", "JMSPriority"}

    def test_comments(self) -> None:
        """-- line and /* block */ comments are skipped, as in ActiveMQ's grammar."""
        assert matches("-- priority check\ni = 5 /* and the colour */ AND color = 'red'")

    @pytest.mark.parametrize("text", ["", "   ", "\n\t"])
    def test_blank_matches_all(self, text: str) -> None:
        """An empty selector is no selector."""
        selector = parse_selector(text)
        assert selector.match_all
        assert selector.matches(lambda name: None)

    def test_cached_and_hashable(self) -> None:
        """Parsing the same text again returns the same immutable selector."""
        first = parse_selector("i = 5")
        assert parse_selector("i = 5") is first
        assert isinstance(first, Selector) and hash(first) == hash(parse_selector("i = 5"))
        assert not first.match_all

    def test_lookup_called_lazily(self) -> None:
        """AND stops at the first false operand, so later properties are not read."""
        seen: list[str] = []

        def lookup(name: str) -> object:
            seen.append(name)
            return MESSAGE.get(name)

        assert not parse_selector("i = 4 AND color = 'red'").matches(lookup)
        assert seen == ["i"]


class TestErrors:
    """Invalid selectors raise InvalidSelector with the text and the 0-based position of the problem."""

    @pytest.mark.parametrize(
        ("text", "position"),
        [
            ("a =", 3),
            ("a = = 1", 4),
            ("(a = 1", 6),
            ("a = 1)", 5),
            ("a = 1 b = 2", 6),
            ("a != 1", 2),
            ("a = 'abc", 4),
            ("a = 1 /* open", 6),
            ("a > 'x'", 2),
            ("'x' < a", 4),
            ("a >= TRUE", 2),
            ("(a = 1) < 2", 8),
            ("a = NULL", 2),
            ("NULL = a", 5),
            ("TRUE = 1", 5),
            ("1", 0),
            ("'abc'", 0),
            ("a + 1", 0),
            ("NULL", 0),
            ("a AND 1", 6),
            ("NOT 'x'", 4),
            ("a LIKE b", 7),
            ("a LIKE 'x' ESCAPE 'ab'", 11),
            ("a IN ()", 6),
            ("a IN (1, 2)", 6),
            ("a IN ('x' 'y')", 10),
            ("1 IN ('a')", 2),
            ("a BETWEEN 1 OR 2", 12),
            ("a BETWEEN 'a' AND 'b'", 2),
            ("a IS 5", 5),
            ("XPATH '//a'", 0),
            ("a = 08", 5),
            ("a = 1e", 5),
            ("a = é", 4),
            ("-- only a comment\n", 18),
        ],
    )
    def test_position(self, text: str, position: int) -> None:
        """The error carries the selector and points at the offending token."""
        with pytest.raises(InvalidSelector) as caught:
            parse_selector(text)
        error = caught.value
        assert error.selector == text  # type: ignore[attr-defined]
        assert error.position == position  # type: ignore[attr-defined]
        assert f"at position {position}" in str(error)
        assert error.code == "invalid-selector"

    def test_not_a_string(self) -> None:
        """Only text can be a selector."""
        with pytest.raises(InvalidSelector):
            parse_selector(5)  # type: ignore[arg-type]


# -- properties ------------------------------------------------------------------------------------

ATOMS = [
    "n > 3",
    "n = 5",
    "n BETWEEN 2 AND 6",
    "n NOT BETWEEN 2 AND 6",
    "n + 1 <> 4",
    "s = 'a'",
    "s LIKE 'a%'",
    "s NOT LIKE '_'",
    "s IN ('a', 'b')",
    "s NOT IN ('ab')",
    "b",
    "b = TRUE",
    "s = n",
    "n IS NULL",
    "s IS NOT NULL",
    "TRUE",
    "FALSE",
]


class TestConvertStringExpressions:
    """ActiveMQ's ``convert_string_expressions:`` prefix (put before every STOMP selector): a string compared with a
    number or a boolean is read as that type first, with Java's valueOf rules."""

    HEADERS: dict[str, object] = {
        "n": "5",
        "big": "12",
        "f": " 2.5 ",
        "d": "2.5d",
        "t": "TRUE",
        "x": "abc",
        "dec": "5.0",
        "num": 5,
        "flag": True,
    }

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("n = 5", True),
            ("5 = n", True),
            ("n <> 5", False),
            ("big > 10", True),
            ("big < 10", False),
            ("big BETWEEN 10 AND 13", True),
            ("big NOT BETWEEN 10 AND 13", False),
            ("n = 5.0", True),  # Double.valueOf reads "5"
            ("dec = 5", False),  # Long.valueOf does not read "5.0"
            ("dec = 5.0", True),
            ("f = 2.5", True),  # Double.valueOf trims, and takes a d or f suffix
            ("d = 2.5", True),
            ("t = TRUE", True),  # Boolean.valueOf ignores case; anything but "true" is false
            ("x = FALSE", True),
            ("x = 5", False),  # unreadable: neither equal, nor ordered
            ("x <> 5", True),
            ("x > 5 OR x <= 5", False),
            ("num = '5'", True),  # a typed property against a string literal reads the literal
            ("flag = 'true'", True),
            ("n = '5'", True),  # two strings: compared as strings, as always
            ("missing = 5", None),
            ("n IN ('5')", True),
        ],
    )
    def test_comparisons_read_strings(self, text: str, expected: bool | None) -> None:
        assert evaluate(f"convert_string_expressions:{text}", self.HEADERS) is expected

    @pytest.mark.parametrize("text", ["num IN ('5')", "num LIKE '5'", "n + 1 = 6", "n * 2 > 1"])
    def test_in_like_and_arithmetic_never_convert(self, text: str) -> None:
        assert evaluate(f"convert_string_expressions:{text}", self.HEADERS) is evaluate(text, self.HEADERS)
        assert not matches(f"convert_string_expressions:{text}", self.HEADERS)

    @pytest.mark.parametrize("text", ["n = 5", "big > 10", "t = TRUE", "num = '5'"])
    def test_without_the_prefix_types_never_mix(self, text: str) -> None:
        assert evaluate(text, self.HEADERS) is False

    def test_the_prefix_alone_selects_everything(self) -> None:
        selector = parse_selector("convert_string_expressions: ")
        assert selector.match_all and selector.matches(self.HEADERS.get)

    def test_errors_point_into_the_expression_after_the_prefix(self) -> None:
        with pytest.raises(InvalidSelector) as info:
            parse_selector("convert_string_expressions:a =")
        assert info.value.position == 3 and "'a ='" in str(info.value)

    def test_it_is_another_selector_than_the_same_text_without_it(self) -> None:
        plain, converting = parse_selector("n = 5"), parse_selector("convert_string_expressions:n = 5")
        assert plain != converting and converting.text == "convert_string_expressions:n = 5"
        assert converting.identifiers == plain.identifiers == frozenset({"n"})


def expressions() -> st.SearchStrategy[str]:
    return st.recursive(
        st.sampled_from(ATOMS),
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda p: f"({p[0]} {p[1]} {p[2]})"),
            inner.map(lambda e: f"NOT ({e})"),
        ),
        max_leaves=8,
    )


messages = st.fixed_dictionaries(
    {
        "n": st.none() | st.integers(0, 8) | st.floats(0, 8, allow_nan=False),
        "s": st.none() | st.sampled_from(["", "a", "ab", "b", "ba"]),
        "b": st.none() | st.booleans() | st.just("yes"),
    }
)


class TestProperties:
    """Laws of three-valued logic that must hold for any expression and message."""

    @given(expression=expressions(), message=messages)
    def test_not_is_complement_when_known(self, expression: str, message: dict[str, object]) -> None:
        """NOT (x) is the complement of x when x is known, and unknown when x is."""
        value = evaluate(expression, message)
        negated = evaluate(f"NOT ({expression})", message)
        assert negated is (None if value is None else not value)
        if value is not None:
            assert matches(expression, message) != matches(f"NOT ({expression})", message)

    @given(left=expressions(), right=expressions(), message=messages)
    def test_de_morgan(self, left: str, right: str, message: dict[str, object]) -> None:
        """NOT (x AND y) equals NOT x OR NOT y, also with unknowns."""
        assert evaluate(f"NOT (({left}) AND ({right}))", message) is evaluate(f"NOT ({left}) OR NOT ({right})", message)

    @given(expression=expressions(), message=messages)
    def test_is_null_detects_unknown(self, expression: str, message: dict[str, object]) -> None:
        """(x) IS NULL holds exactly when x is unknown."""
        assert evaluate(f"({expression}) IS NULL", message) is (evaluate(expression, message) is None)
