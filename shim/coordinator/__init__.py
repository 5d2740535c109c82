"""kshim's group coordinator: a deterministic, sans-IO state machine (no sockets, threads or wall
clock). Requests and clock ticks go in; responses, state records and timer deadlines come out."""

from .core import CoordinatorConfig, GroupCoordinator, Respond

__all__ = ["CoordinatorConfig", "GroupCoordinator", "Respond"]
