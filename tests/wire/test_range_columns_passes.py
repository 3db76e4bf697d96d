"""``range_columns`` builds each column in one pass over the messages (issue 45); this is the message-by-message
way it replaced, kept as the reference both must agree with on every kind of body, id, property and header."""

from __future__ import annotations

import itertools
import random
import sys
from array import array
from collections.abc import Sequence

import pytest

from minibroker.message import Destination, Message, ObjectBody, body_as_bytes, string_properties
from minibroker.wire.columns import COLUMN_SECTIONS, range_columns


def _le(values: array[int]) -> bytes:
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def _offsets(lengths: Sequence[int]) -> bytes:
    return _le(array("i", itertools.accumulate(lengths, initial=0)))


def reference(seqs: Sequence[int], messages: Sequence[Message], counters: Sequence[int]) -> dict[str, bytes]:
    ids = [m.message_id.encode() for m in messages]
    bodies = [body_as_bytes(m.body) for m in messages]
    prop_counts, keys, values, nulls = [], [], [], bytearray()
    for m in messages:
        has = m.properties or any(x is not None for x in (m.correlation_id, m.type, m.reply_to, m.group_id))
        pairs = string_properties(m) if has else []
        for k, v in pairs:
            keys.append(k.encode())
            values.append(b"" if v is None else v.encode())
            nulls.append(v is None)
        prop_counts.append(len(pairs))
    return {
        "seq": _le(array("q", seqs)),
        "redelivery_counter": _le(array("i", counters)),
        "priority": _le(array("i", [m.priority for m in messages])),
        "timestamp": _le(array("q", [round(m.timestamp * 1_000_000) for m in messages])),
        "flags": bytes((1 if type(m.body) is str else 0) | (2 if m.persistent else 0) for m in messages),
        "id_offsets": _offsets([len(i) for i in ids]),
        "id_data": b"".join(ids),
        "body_offsets": _offsets([len(b) for b in bodies]),
        "body_data": b"".join(bodies),
        "prop_offsets": _offsets(prop_counts),
        "key_offsets": _offsets([len(k) for k in keys]),
        "key_data": b"".join(keys),
        "value_offsets": _offsets([len(v) for v in values]),
        "value_data": b"".join(values),
        "value_nulls": bytes(nulls),
    }


def _message(rnd: random.Random, i: int) -> Message:
    body = rnd.choice([b"x" * rnd.randrange(40), b"", "tëxt", "", {"a": i}, (1, "b"), ObjectBody(b"\xac\xed")])
    headers = {
        "correlation_id": rnd.choice([None, None, "c", ""]),
        "type": rnd.choice([None, None, "t"]),
        "group_id": rnd.choice([None, None, "g"]),
        "reply_to": rnd.choice([None, None, Destination.queue("r")]),
    }
    properties = rnd.choice([{}, {}, {"k": i, "s": "v"}, {"n": None}])
    message_id = rnd.choice([f"ID:x:{i}", f"ID:é:{i}"])
    return Message(
        message_id,
        Destination.queue("q"),
        body,
        properties,
        rnd.randrange(10),
        rnd.random() < 0.5,
        1.7e9 + rnd.random() * 1000,
        **headers,
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_column_passes_agree_with_the_message_by_message_way(seed: int) -> None:
    rnd = random.Random(seed)
    n = rnd.randrange(0, 40)
    if seed % 4 == 0:  # the Spark benchmark's shape: bytes bodies, no properties (the fast path alone)
        messages = [
            Message(f"ID:b:{i}", Destination.queue("q"), b"y" * i, {}, 4, True, 1.7e9 + i / 7) for i in range(n)
        ]
    else:
        messages = [_message(rnd, i) for i in range(n)]
    seqs = [rnd.randrange(2**40) for _ in range(n)]
    counters = [rnd.randrange(3) for _ in range(n)]
    got = range_columns(1, "epoch", 99, seqs, messages, counters)
    want = reference(seqs, messages, counters)
    assert {name: getattr(got, name) for name in COLUMN_SECTIONS} == want, f"seed {seed}"
    assert got.count == n
