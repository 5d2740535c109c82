"""Fault rules: parsing and matching (the `faults` setting and the admin endpoint's POST /faults);
shim/proxy/faults.py applies them to client requests. Below the configuration, which validates
its `faults` list with `parse_rules`.

A rule (from the config file's `[[faults]]` list or the admin endpoint, docs/kshim-run.md):

    api       API name or key ("Heartbeat", 12, "*" for every API)         required
    action    "delay" | "drop" | "error" | "close"                           required
    delay_ms  for delay: how long the request (and the ones after it on that connection) waits
    error     for error: the code, a number or any name of Kafka's Errors (NOT_COORDINATOR, ...);
              the answer has the response shape of that API/version (shim/error_answers.py)
    versions  [min, max] of the request version (default every version)
    one of    probability (0..1, seeded: `seed`, default 0), first (the first N matching requests),
              every (every Nth matching request); none of them = every matching request
    client_id only requests whose client id starts with this (default any)
"""

from __future__ import annotations

import random

from kcodec import api
from kcodec.protocol import Error

ACTIONS = ("delay", "drop", "error", "close")
# every error name of Kafka's Errors (kcodec.protocol, generated), e.g. NOT_COORDINATOR
ERROR_NAMES: dict[str, int] = dict(Error.__members__)
_NAME_TO_KEY = {name.lower(): key for key, name in api.API_KEYS.items()}


class FaultError(ValueError):
    """A rule is wrong; the message names the field."""


def api_key_of(value) -> int | None:
    """An API key from a number or a name (any case); None for "*"."""
    if value == "*":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        key = value
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
        key = int(value)
    elif isinstance(value, str) and value.strip().lower() in _NAME_TO_KEY:
        return _NAME_TO_KEY[value.strip().lower()]
    else:
        raise FaultError(f"api {value!r}: use an API name (e.g. Heartbeat), a key number or \"*\"")
    if key not in api.API_KEYS:
        raise FaultError(f"api {value!r}: no such API key")
    return key


def error_code_of(value) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text)
        if text.upper() in ERROR_NAMES:
            return ERROR_NAMES[text.upper()]
    raise FaultError(f"error {value!r}: use a Kafka error code number or a name from Kafka's Errors "
                     f"(e.g. NOT_COORDINATOR, REBALANCE_IN_PROGRESS)")


class Rule:
    FIELDS = ("api", "action", "delay_ms", "error", "versions", "probability", "first", "every", "seed", "client_id")

    def __init__(self, spec: dict, rule_id: int = 0):
        if not isinstance(spec, dict):
            raise FaultError(f"a fault rule is a table/object, not {spec!r}")
        unknown = sorted(set(spec) - set(self.FIELDS) - {"id", "matched", "applied"})
        if unknown:
            raise FaultError(f"fault rule: unknown field(s) {', '.join(unknown)}; known: {', '.join(self.FIELDS)}")
        if "api" not in spec or "action" not in spec:
            raise FaultError("fault rule: `api` and `action` are required")
        self.id = rule_id
        self.spec = {k: v for k, v in spec.items() if k in self.FIELDS}
        self.api_key = api_key_of(spec["api"])
        self.action = str(spec["action"]).lower()
        if self.action not in ACTIONS:
            raise FaultError(f"action {spec['action']!r}: use one of {', '.join(ACTIONS)}")
        self.delay_s = _number(spec, "delay_ms", 0, 0, 3_600_000) / 1000.0
        if self.action == "delay" and not self.delay_s:
            raise FaultError("action delay needs delay_ms > 0")
        self.error = 0
        if self.action == "error":
            from .error_answers import supports    # (kcodec's response classes: only when needed)
            if "error" not in spec:
                raise FaultError("action error needs `error` (a code or a name)")
            self.error = error_code_of(spec["error"])
            if self.api_key is not None and not supports(self.api_key):
                raise FaultError(f"api {spec['api']!r}: its response has no error code to set")
        versions = spec.get("versions")
        if versions is None:
            self.versions = (0, 1 << 15)
        elif isinstance(versions, (list, tuple)) and len(versions) == 2 and all(isinstance(x, int) for x in versions):
            self.versions = (versions[0], versions[1])
        else:
            raise FaultError(f"versions {versions!r}: use [min, max]")
        modes = [m for m in ("probability", "first", "every") if spec.get(m) is not None]
        if len(modes) > 1:
            raise FaultError(f"fault rule: give one of probability, first, every (not {', '.join(modes)})")
        self.probability = _number(spec, "probability", 1.0, 0.0, 1.0)
        self.first = int(_number(spec, "first", 0, 0, 1 << 62))
        self.every = int(_number(spec, "every", 0, 0, 1 << 62))
        self.rng = random.Random(int(_number(spec, "seed", 0, -(1 << 62), 1 << 62)))
        self.client_id = spec.get("client_id")
        self.matched = 0     # requests this rule looked at (api, version, client matched)
        self.applied = 0     # requests it acted on

    def matches(self, api_key: int, version: int, client_id: str | None) -> bool:
        if self.api_key is not None and api_key != self.api_key:
            return False
        if not self.versions[0] <= version <= self.versions[1]:
            return False
        return self.client_id is None or (client_id or "").startswith(self.client_id)

    def fires(self) -> bool:
        self.matched += 1
        n = self.matched
        if self.first:
            hit = n <= self.first
        elif self.every:
            hit = n % self.every == 0
        else:
            hit = self.probability >= 1.0 or self.rng.random() < self.probability
        if hit:
            self.applied += 1
        return hit

    def describe(self) -> dict:
        return {"id": self.id, **self.spec, "matched": self.matched, "applied": self.applied}


def _number(spec: dict, name: str, default, lo, hi):
    value = spec.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FaultError(f"{name} {value!r}: a number is needed")
    if not lo <= value <= hi:
        raise FaultError(f"{name} {value!r}: must be within {lo}..{hi}")
    return value


def parse_rules(specs) -> list[Rule]:
    if specs is None:
        return []
    if isinstance(specs, dict):
        specs = [specs]
    if not isinstance(specs, list):
        raise FaultError("faults: a list of rules is expected")
    return [Rule(s, i + 1) for i, s in enumerate(specs)]
