"""A Spark Structured Streaming pipeline on minibroker: price the orders of one queue into another, then ack.

Orders arrive on the ``orders`` queue as JSON (``{"id": "A-1", "qty": 3, "unit_cents": 250}``). The pipeline reads
them with the ``minibroker`` format, computes each total, and writes ``{"id": ..., "total_cents": ...}`` to the
``priced`` queue, keeping the order's properties and adding ``source_message_id``. It runs as an availableNow
query: everything waiting is processed in micro-batches of at most ``max_per_trigger`` orders, then it stops.

Delivery: Spark's checkpoint says what was processed; a run that dies is simply started again and resumes there
(the broker's range reads are non-destructive). Each committed micro-batch is acked on the source queue, and
:func:`ack_final` acks the last one (Spark never commits a query's final batch). The writer's message ids are
deterministic (query id, batch id, partition, row), and the broker drops re-sent ids, so a retried task or a
re-run batch does not duplicate priced orders.

Run it: ``python examples/spark_pipeline.py`` starts a local Spark and a broker in a thread, sends a few orders, runs
the pipeline and prints the priced orders (it says so and exits if pyspark or java are missing).
"""

from __future__ import annotations

import json
import sys
import tempfile
from typing import Any

from minibroker.plugins.spark.testing import ThreadedBroker, build_spark_session, spark_unavailable

ORDERS = "orders"
PRICED = "priced"
ORDER_SCHEMA = "id STRING, qty INT, unit_cents INT"


def build_query(
    spark: Any, url: str, checkpoint: str, *, source: str = ORDERS, target: str = PRICED, max_per_trigger: int = 1000
) -> Any:
    """The streaming query (started): orders -> priced orders, availableNow."""
    from pyspark.sql import functions as F

    orders = (
        spark.readStream.format("minibroker")
        .option("url", url)
        .option("destinations", source)
        .option("bodyType", "string")
        .option("maxMessagesPerTrigger", str(max_per_trigger))
        .load()
    )
    order = F.from_json("body", ORDER_SCHEMA)
    priced = orders.select(
        F.to_json(F.struct(order["id"].alias("id"), (order["qty"] * order["unit_cents"]).alias("total_cents"))).alias(
            "body"
        ),
        F.map_concat("properties", F.create_map(F.lit("source_message_id"), "message_id")).alias("properties"),
    )
    return (
        priced.writeStream.format("minibroker")
        .option("url", url)
        .option("destination", target)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )


def run_pipeline(spark: Any, url: str, checkpoint: str, *, timeout: float = 300, **kwargs: Any) -> int:
    """Process every waiting order, ack the source, and return how many orders the run acked."""
    from minibroker.plugins.spark import ack_final

    query = build_query(spark, url, checkpoint, **kwargs)
    try:
        if not query.awaitTermination(timeout):
            raise TimeoutError(f"the pipeline did not finish within {timeout} s")
    finally:
        query.stop()
    acks = ack_final(query, url)  # the last micro-batch: Spark does not commit it
    return sum(a.floor for a in acks)


def main() -> int:
    reason = spark_unavailable()
    if reason is not None:
        print(f"spark_pipeline: skipped, {reason}")
        return 0
    spark = build_spark_session("minibroker-example")
    try:
        with ThreadedBroker() as tb, tempfile.TemporaryDirectory() as checkpoint:
            tb.send(
                ORDERS,
                [json.dumps({"id": f"A-{i}", "qty": i, "unit_cents": 250}) for i in range(1, 6)],
                properties={"customer": "acme"},
            )
            run_pipeline(spark, tb.url, checkpoint, max_per_trigger=2)
            for entry in tb.read(PRICED):
                print(entry.message.body, dict(entry.message.properties))
            print(f"orders left: {tb.size(ORDERS)}, priced: {tb.size(PRICED)}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
