"""Kafka's Java tools as subprocesses: the driver lives in the product (`shim/compat/javaclient.py`,
used by `kshim compat`); the tests use the same one."""

from shim.compat.javaclient import JavaClient, JavaTools, ToolFailed, parse_events, run_tool

__all__ = ["JavaClient", "JavaTools", "ToolFailed", "parse_events", "run_tool"]
