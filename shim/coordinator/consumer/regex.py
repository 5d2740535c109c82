"""SubscribedTopicRegex for consumer groups (spec §D.3 step 8): validation and resolution with the
RE2J semantics of shim/coordinator/assignors/regex.py (its docstring lists the differences from the
broker's RE2J). Resolution = every topic name of the catalog the pattern matches in full, that the
member whose heartbeat resolved it may DESCRIBE (`allowed`, when kshim authorizes; the group keeps
that member's filter for later re-resolutions, where the broker uses the member whose heartbeat
triggers each one)."""

from __future__ import annotations

from typing import Callable

from ..assignors.regex import InvalidRegularExpression as InvalidRegex
from ..assignors.regex import resolve as _resolve
from ..assignors.regex import validate

__all__ = ["InvalidRegex", "resolve", "validate"]


def resolve(pattern: str, names, allowed: Callable[[str], bool] | None = None) -> frozenset[str]:
    matched = _resolve(pattern, list(names))
    return matched if allowed is None else frozenset(n for n in matched if allowed(n))
