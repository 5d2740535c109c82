"""Group members driven by Python clients: the product's (`shim/compat/pymembers.py`, used by
`kshim compat`); the tests use the same one."""

from shim.compat.pymembers import Member, wait_until

__all__ = ["Member", "wait_until"]
