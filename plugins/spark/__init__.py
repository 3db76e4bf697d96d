"""Apache Spark on minibroker: a PySpark data source named ``minibroker`` (batch and streaming, read and write).

Needs the ``spark`` extra (``pip install 'minibroker[spark]'``: pyspark >= 4.2 and pyarrow). This package imports
without it; asking for the data source then raises an :class:`ImportError` that says what to install. ::

    from minibroker.plugins.spark import register, ack_final

    register(spark)                                            # spark.dataSource.register(MinibrokerDataSource)
    df = spark.read.format("minibroker").option("url", url).option("destinations", "orders.>").load()
    query = (spark.readStream.format("minibroker").option("url", url).option("destinations", "orders")
             .load().writeStream.foreachBatch(handle).option("checkpointLocation", path)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    ack_final(query, url)                                      # Spark never commits a query's last batch

Spark runs data sources in other processes: the broker must listen on TCP (``minibroker serve``, or
:class:`~minibroker.plugins.spark.testing.ThreadedBroker` in tests). Read columns: ``message_id``, ``destination``,
``seq`` (the per-queue sequence number), ``body`` (BINARY, or STRING with ``bodyType=string``), ``properties``
(MAP<STRING,STRING>: application properties stringified, plus the JMS headers JMSCorrelationID, JMSType,
JMSReplyTo, JMSXGroupID/JMSXGroupSeq when set), ``priority``, ``timestamp`` (UTC), ``redelivered`` and
``delivery_count`` (the broker's delivery state when read: informational, not stable across replays).

Semantics: a batch read browses a snapshot and consumes nothing. A streaming read takes sequence ranges that Spark
checkpoints, and acks them (cursor acks) when Spark commits; a restarted query replays from its checkpoint; a
restarted broker (new epoch) fails the query unless ``failOnDataLoss=false``. Writes are at-least-once on Spark's
side and made idempotent by deterministic message ids that the broker de-duplicates. Options are listed on
:class:`MinibrokerDataSource`; the pytest fixtures are in :mod:`minibroker.plugins.spark.testing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "SCHEMA",
    "MinibrokerDataSource",
    "ack_final",
    "register",
    "schema_for",
]

if TYPE_CHECKING:
    from ._source import SCHEMA, MinibrokerDataSource, ack_final, register, schema_for


def __getattr__(name: str) -> Any:
    if name in __all__:
        try:
            from . import _source
        except ImportError as exc:
            raise ImportError(
                f"minibroker.plugins.spark.{name} needs pyspark and pyarrow: pip install 'minibroker[spark]' ({exc})"
            ) from exc
        return getattr(_source, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
