"""The driver: the asyncio side of the broker and the one door into the core (see ``docs/development.md``).

``broker.py`` (:class:`~minibroker.Broker`: the core, its clock's timer, the store, the filter chain),
``connection.py`` (:class:`~minibroker.BrokerConnection`: what one client connection may do, authorized),
``link.py`` (the in-process link a client speaks through), ``views.py`` and ``reads.py`` (the broker's operator
views and replayable reads), ``results.py`` (the values they answer with), ``flow.py`` (producer flow control's
waiters) and ``sockets.py`` (the connection slots every listener shares). Public names are re-exported by
:mod:`minibroker`; nothing here is imported by an edge except through them.
"""
