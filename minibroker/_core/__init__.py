"""The pure, sans-IO broker core: no asyncio, no wall clock, no sockets."""
