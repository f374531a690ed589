"""Shared test helpers: scripted and hostile servers, OTLP builders, options, case tables.

Imported as ``tests.helpers.<module>`` (the repository root is on ``sys.path`` through
``pythonpath`` in pyproject.toml), so they work with every pytest import mode.
Test modules import from here, never from each other.
"""
