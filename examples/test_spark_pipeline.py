"""Tests of the Spark pipeline with minibroker's Spark fixtures (skipped without java or pyspark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from spark_pipeline import ORDERS, PRICED, run_pipeline

from minibroker.plugins.spark.testing import ThreadedBroker

pytestmark = pytest.mark.spark


def order(i: int) -> str:
    return json.dumps({"id": f"A-{i}", "qty": i, "unit_cents": 100})


def test_orders_are_priced_once_and_acked(
    minibroker_spark: Any, threaded_minibroker: ThreadedBroker, tmp_path: Path
) -> None:
    tb = threaded_minibroker
    ids = tb.send(ORDERS, [order(i) for i in range(1, 6)], properties={"customer": "acme"})
    checkpoint = str(tmp_path / "checkpoint")
    run_pipeline(minibroker_spark, tb.url, checkpoint, max_per_trigger=2)
    priced = [(json.loads(e.message.body), dict(e.message.properties)) for e in tb.read(PRICED)]
    assert sorted(p["id"] for p, _ in priced) == [f"A-{i}" for i in range(1, 6)]
    assert all(p["total_cents"] == int(p["id"][2:]) * 100 for p, _ in priced)
    assert sorted(props["source_message_id"] for _, props in priced) == sorted(ids)
    assert all(props["customer"] == "acme" for _, props in priced)
    assert tb.size(ORDERS) == 0

    # a second run from the same checkpoint prices only what arrived since
    tb.send(ORDERS, [order(6)])
    run_pipeline(minibroker_spark, tb.url, checkpoint)
    assert sorted(json.loads(e.message.body)["id"] for e in tb.read(PRICED)) == [f"A-{i}" for i in range(1, 7)]
    assert tb.size(ORDERS) == 0
