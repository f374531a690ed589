"""The serving engines the plugin starts in containers: one module per server kind.

Each module declares one ``KIND`` (a :class:`~pytest_latency.servers.kinds.ServerKind`)
named as the module. The registry (:mod:`pytest_latency.servers.kinds`) lists the
modules in this folder without importing them, so adding a kind is adding its module
here (and its test); nothing else names it.
"""
