"""The PySpark data source (format ``minibroker``): batch and streaming reads of queues, batch and streaming writes.

Imports pyspark and pyarrow: install the ``spark`` extra. Everything here runs in Spark's Python processes (the
planner, the streaming runner, the executors), never in the process that built the query, so every connection is
made over TCP (option ``url``) by :class:`~minibroker.plugins.spark._wire.BlockingClient`, lazily, and nothing that
holds a socket is pickled.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import (
    DataSource,
)
from pyspark.sql.types import (
    StructType,
)

from minibroker.errors import InvalidConfiguration

from ._columns import SCHEMA, arrow_schema, schema_for
from ._options import (
    SourceOptions,
    WriterOptions,
)
from ._reader import MinibrokerPartition, MinibrokerReader, MinibrokerStreamReader, ack_final
from ._writer import MinibrokerStreamWriter, MinibrokerWriter, WriteResult

__all__ = [
    "SCHEMA",
    "MinibrokerDataSource",
    "MinibrokerPartition",
    "WriteResult",
    "ack_final",
    "arrow_schema",
    "register",
    "schema_for",
]


class MinibrokerDataSource(DataSource):
    """``spark.read.format("minibroker")`` / ``readStream`` / ``write`` / ``writeStream`` on a minibroker queue.

    Read options: ``url`` (tcp://HOST:PORT, required), ``destinations`` (queue names separated by commas, or ActiveMQ
    wildcards such as ``orders.>``), ``startingOffsets`` (``earliest``: the first message not yet acked, the
    default; ``latest``; or JSON ``{"queue": seq}``), ``endingOffsets`` (batch: ``latest`` or JSON), ``bodyType``
    (``binary`` or ``string``), ``maxMessagesPerTrigger``, ``maxMessagesPerPartition`` (default 100000), ``cursor``
    (the name streaming commits ack under, default ``spark``), ``ackOnCommit`` (default true),
    ``subscriptionName`` and ``clientId`` (a ``topic://`` destination is read through that durable subscription),
    ``failOnDataLoss`` (default true: a broker restart fails the query; false: go on from the new broker's first
    messages), ``pageSize`` (messages per request, default 10000).

    Write options: ``url``, ``destination`` (or a ``destination`` column), ``batchSize`` (default 1000),
    ``dedupe`` (default true), ``writeId``, ``persistent``.
    """

    @classmethod
    def name(cls) -> str:
        return "minibroker"

    def schema(self) -> StructType:
        body = str(self.options.get("bodyType", self.options.get("bodytype", "binary"))).lower()
        return schema_for("string" if body == "string" else "binary")

    def reader(self, schema: StructType) -> MinibrokerReader:
        return MinibrokerReader(SourceOptions.parse(self.options), schema)

    def streamReader(self, schema: StructType) -> MinibrokerStreamReader:
        return MinibrokerStreamReader(SourceOptions.parse(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> MinibrokerWriter:
        _check_overwrite(overwrite)
        return MinibrokerWriter(WriterOptions.parse(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> MinibrokerStreamWriter:
        _check_overwrite(overwrite)
        return MinibrokerStreamWriter(WriterOptions.parse(self.options))


def _check_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise InvalidConfiguration(
            "the minibroker sink only appends (a queue cannot be overwritten): use mode('append')"
        )


def register(spark: Any) -> None:
    """Register the ``minibroker`` format with ``spark`` (a SparkSession)."""
    spark.dataSource.register(MinibrokerDataSource)
