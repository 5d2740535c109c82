"""Dynamic membership with eager (range) and cooperative-sticky assignors, and a consumer that
exceeds max.poll.interval.ms; through kshim and directly, with the same observations."""

from __future__ import annotations

import pytest

from testsuite.groups.scenarios import COOPERATIVE, dynamic_membership
from shim.compat.javaclient import JavaTools
from testsuite.harness.sides import both_sides


@pytest.mark.parametrize("assignor", [None, COOPERATIVE], ids=["eager-range", "cooperative-sticky"])
def test_join_leave_and_session_expiry(kafka, kshim, kafka_install, names, tmp_path, assignor):
    bootstraps = {"broker": kafka.bootstrap, "kshim": kshim.bootstrap}

    def side(where: str) -> dict:
        tools = JavaTools(kafka_install, bootstraps[where], tmp_path / where)
        try:
            return dynamic_membership(tools, names, assignor)
        finally:
            tools.stop_all()
    facts = both_sides(side)
    assert facts["kshim"] == facts["broker"]
    assert facts["kshim"] == {"after_join": [2, 2], "after_leave": 4,
                              "crash_detected_after_session_timeout": True, "after_crash": 4}


def max_poll_exceeded(bootstrap: str, kafka_install, log_dir) -> dict:
    """A member that stops polling for longer than max.poll.interval.ms leaves the group (the
    client sends LeaveGroup); the other member takes all partitions; polling again rejoins
    (the `kshim compat` scenario max-poll-interval)."""
    from shim.compat.context import Ctx
    from shim.compat.scenarios.liveness import max_poll_interval
    ctx = Ctx(bootstrap, "t", JavaTools(kafka_install, bootstrap, log_dir))
    try:
        return max_poll_interval(ctx, "librdkafka", "classic")
    finally:
        ctx.stop_all()


def test_max_poll_interval_exceeded(kafka, kshim, kafka_install, tmp_path):
    bootstraps = {"broker": kafka.bootstrap, "kshim": kshim.bootstrap}
    facts = both_sides(lambda where: max_poll_exceeded(bootstraps[where], kafka_install, tmp_path / where))
    broker, through = facts["broker"], facts["kshim"]
    assert through == broker
    assert through == {"shared": 1, "steady_after_stall": 2, "max_poll_error": True, "after_rejoin": 1}
