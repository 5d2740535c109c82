"""Short property-based run of the coordinator fuzz target (testsuite/hardening/coordinator_fuzz.py):
random programs of group requests (every API and version kshim's coordinator answers, raw or
schema-valid) and clock moves into a fresh GroupCoordinator. No exception may escape, every answer
must encode, state stays bounded by the input, nothing is left unanswered, replaying the records
written rebuilds the live durable state (testsuite/coordinator/replay_check.py). Deterministic
(derandomized); the long coverage-guided run is scripts/fuzz-coordinator."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testsuite.hardening import coordinator_fuzz as cf

FAST = settings(max_examples=1500, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


@FAST
@given(st.binary(max_size=600))
def test_coordinator_programs(data):
    cf.run(data)


def test_the_target_reaches_live_groups():
    """The generator is not only noise: a fixed input family joins members and completes rebalances."""
    import random
    rnd = random.Random(3)
    reached = set()
    for _ in range(400):
        prog = cf.Program(bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(50, 400))))
        for _ in range(cf.MAX_STEPS):
            if prog.r.u8() % 3 == 0:
                prog.tick()
            else:
                prog.send()
            reached |= {g.state for g in prog.c.groups.values()}
    assert {"Empty", "PreparingRebalance", "CompletingRebalance"} <= reached


def test_a_finding_is_reported():
    """The invariants can fail: an answer to a token nobody is waiting for is a finding."""
    import pytest

    from shim.coordinator import CoordinatorResult, Respond
    from kcodec.generated.heartbeat import HeartbeatResponse
    prog = cf.Program(b"")
    with pytest.raises(cf.Finding, match="not waiting"):
        prog.collect(CoordinatorResult([Respond(token=99, body=HeartbeatResponse())]))


def test_fuzz_regressions():
    """Inputs the fuzzers found, kept. superseded-join.bin: a static member's JoinGroup left parked
    when the same member joins again (Kafka leaves the older request unanswered too; the target
    allows exactly that). join-timer-loop-*.bin: members with rebalance_timeout_ms <= 0 and a static
    member that does not rejoin, which loop GroupCoordinator.tick() forever if the join timer re-arms at
    the same instant (shim/coordinator/classic_rebalance.py `_schedule_join` waits a session timeout). A hang
    fails here through SIGALRM after 10 s."""
    import signal
    from pathlib import Path

    def boom(*_):
        raise TimeoutError("the coordinator did not return (timer loop)")
    files = sorted((Path(__file__).parent / "fuzz_regressions").glob("*.bin"))
    assert len(files) >= 3
    old = signal.signal(signal.SIGALRM, boom)
    try:
        for f in files:
            signal.alarm(10)
            cf.run(f.read_bytes())
            signal.alarm(0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
