"""The scenario table: name -> function, which clients and protocols it runs with, and whether it is
in the quick subset CI runs. A scenario is `fn(ctx, client, protocol) -> dict` of observations that
do not depend on timing (error names, epochs, counts, assignments sizes, booleans). An `opt_in`
scenario needs a target set up for it and runs only when named."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import admin, consumer, liveness, offsets, rebalance, retention, static, txn, upgrade


@dataclass(frozen=True)
class Scenario:
    name: str
    fn: Callable
    clients: tuple[str, ...]
    protocols: tuple[str, ...]
    quick: bool = False
    opt_in: bool = False

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip().split("\n")[0]


PY = ("librdkafka", "aiokafka", "kafka-python")
SCENARIOS = {s.name: s for s in [
    Scenario("static-bounce", static.static_bounce, ("java", *PY), ("classic",), quick=True),
    Scenario("static-leader-bounce", static.static_leader_bounce, ("java", "librdkafka"), ("classic",)),
    Scenario("duplicate-instance-fencing", static.duplicate_instance_fencing, ("java",), ("classic",)),
    Scenario("rolling-bounce", static.rolling_bounce, ("java", *PY), ("classic",)),
    Scenario("session-timeout", liveness.session_timeout, ("java",), ("classic",)),
    Scenario("max-poll-interval", liveness.max_poll_interval, ("librdkafka",), ("classic",)),
    Scenario("batch-leave", admin.batch_leave, ("java",), ("classic",)),
    Scenario("eager-vs-cooperative", rebalance.eager_vs_cooperative, ("java",), ("classic",)),
    Scenario("offsets", offsets.offsets, ("librdkafka",), ("classic",), quick=True),
    Scenario("txn-offsets", txn.txn_offsets, ("librdkafka",), ("classic",), quick=True),
    Scenario("cg-join-leave", consumer.consumer_join_leave, ("java",), ("consumer",)),
    Scenario("cg-wire-epochs", consumer.consumer_wire_epochs, ("wire",), ("consumer",)),
    Scenario("cg-regex", consumer.consumer_regex, ("wire",), ("consumer",)),
    Scenario("cg-static", consumer.consumer_static, ("java",), ("consumer",)),
    Scenario("classic-to-consumer", upgrade.classic_to_consumer, ("java",), ("consumer",)),
    Scenario("cg-retention", retention.consumer_retention, ("wire",), ("consumer",), opt_in=True),
]}

ALL_CLIENTS = ("java", *PY, "wire")


def plan(names: list[str] | None, clients: list[str], protocols: list[str], quick: bool = False
         ) -> list[tuple[Scenario, str, str]]:
    """Every (scenario, client, protocol) to run, in table order."""
    unknown = set(names or ()) - set(SCENARIOS)
    if unknown:
        raise ValueError(f"unknown scenario(s) {sorted(unknown)}; known: {', '.join(SCENARIOS)}")
    out = []
    for s in SCENARIOS.values():
        if (names and s.name not in names) or (quick and not s.quick) or (s.opt_in and not names):
            continue
        out += [(s, c, p) for c in s.clients if c in clients for p in s.protocols if p in protocols]
    return out
