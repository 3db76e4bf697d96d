"""Broker filters: plugins that sit in the broker's filter chain, as ActiveMQ's ``BrokerFilter``s do
(``minibroker.filters``): users and ActiveMQ's authorization map (:mod:`.auth`), the broker redelivery plugin
(:mod:`.redelivery`). Their public names are ``minibroker.plugins.auth`` and ``minibroker.plugins.redelivery``."""
