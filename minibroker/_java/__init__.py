"""Java value compatibility: how ActiveMQ's Java client writes and reads values (``values.py``: Java's number and
boolean conversions, modified UTF-8) and message bodies (``bodies.py``: stream and map bodies, serialized objects).
The public side is :mod:`minibroker.typed` (Java's numeric types as Python values)."""
