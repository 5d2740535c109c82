"""Free port blocks: moved to shim/testing/ports.py (the pytest plugin uses them too)."""

from shim.testing.ports import LOWEST, ephemeral_low, free_port_block

__all__ = ["LOWEST", "ephemeral_low", "free_port_block"]
