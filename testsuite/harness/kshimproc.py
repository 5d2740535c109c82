"""kshim as a real subprocess: moved to shim/testing/kshimproc.py (the pytest plugin uses it too)."""

from shim.testing.kshimproc import KshimProcess

__all__ = ["KshimProcess"]
