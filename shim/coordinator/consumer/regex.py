"""SubscribedTopicRegex for consumer groups (spec §D.3 step 8): validation and resolution with the
RE2J semantics of shim/coordinator/assignors/regex.py (its docstring lists the differences from the
broker's RE2J). Resolution = every topic name of the catalog the pattern matches in full."""

from __future__ import annotations

from ..assignors.regex import InvalidRegularExpression as InvalidRegex
from ..assignors.regex import resolve as _resolve
from ..assignors.regex import validate

__all__ = ["InvalidRegex", "resolve", "validate"]


def resolve(pattern: str, names) -> frozenset[str]:
    return _resolve(pattern, list(names))
