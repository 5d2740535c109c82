"""Fresh topic and group names: moved to shim/testing/names.py (the pytest plugin uses them too)."""

from shim.testing.names import unique_name

__all__ = ["unique_name"]
