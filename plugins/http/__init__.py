"""ActiveMQ's HTTP face for ``minibroker serve``: the web console, Jolokia management and the REST message API.

``parser`` reads HTTP/1.1 requests (sans I/O); the rest is added as it is built.
"""
