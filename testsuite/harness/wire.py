"""A raw Kafka wire client for tests: the product's (`shim/compat/wire.py`, used by `kshim compat`)."""

from shim.compat.wire import Wire

__all__ = ["Wire"]
