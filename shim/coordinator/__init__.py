"""kshim's group coordinator: a deterministic, sans-IO state machine (no sockets, threads or wall
clock). Requests and clock ticks go in; responses, state records and timer deadlines come out.
A newcomer's map: dispatch.py (which code answers each API, by group type), group_coordinator.py
(the inputs), shard_clock.py (clock, timers, outbox), classic_rebalance.py (classic state transitions).

The names below load on first use: `kshim trace analyze` reads consumer/embedded.py on Spark workers,
whose Python has no re2 (the assignors' regexes) and needs none of the coordinator."""

from __future__ import annotations

from importlib import import_module

_EXPORTS = {
    "CoordinatorConfig": "config",
    "CoordinatorResult": "result",
    "GroupCoordinator": "group_coordinator",
    "Respond": "result",
    "VERSIONS": "dispatch",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # import here: a name loads its module on first use (see the docstring: Spark workers)
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
