"""Group scenarios with real clients, written once and run against any bootstrap (the real broker
or kshim); each returns the facts a user could observe, so two runs can be compared."""

from __future__ import annotations

import time

from shim.compat.pymembers import create_topic
from shim.compat.pymembers import wait_until as _wait
from shim.compat.javaclient import JavaClient, JavaTools

SESSION_MS = 10000


def _rebalance_events(c: JavaClient) -> int:
    return len(c.named("partitions_assigned")) + len(c.named("partitions_revoked"))


def _balanced(members: list[JavaClient], partitions: int) -> bool:
    owned = [m.assigned() for m in members]
    per = partitions // len(members)
    return all(len(o) == per for o in owned) and len(set().union(*owned)) == partitions


def start_static_group(java: JavaTools, topic: str, group: str, n: int, prefix: str) -> list[JavaClient]:
    """n static members started one after the other (member 0 joins first and leads)."""
    members = []
    for i in range(n):
        m = java.verifiable_consumer(topic, group, instance_id=f"{prefix}-{i}", session_timeout_ms=SESSION_MS,
                                     name=f"{prefix}-{i}")
        members.append(m)
        m.wait_event("partitions_assigned", timeout=60)
    return members


def static_bounce(java: JavaTools, names, bouncee: int, tag: str) -> dict:
    """3 static members on 6 partitions; stop member `bouncee` and restart it with the same
    group.instance.id within the session timeout. Observed: did anyone else see a rebalance, and
    did the restarted member get its old partitions back."""
    topic, group = names.topic(), names.group()
    create_topic(java.bootstrap, topic, partitions=6)
    members = start_static_group(java, topic, group, 3, f"{group}-{tag}")
    _wait(lambda: _balanced(members, 6), 90, "a balanced static group")
    time.sleep(2)
    before = {i: m.assigned() for i, m in enumerate(members)}
    events_before = {i: _rebalance_events(m) for i, m in enumerate(members)}
    old = members[bouncee]
    old.stop()
    restarted = java.verifiable_consumer(topic, group, instance_id=f"{group}-{tag}-{bouncee}",
                                         session_timeout_ms=SESSION_MS, name=f"{group}-{tag}-{bouncee}-again")
    restarted.wait_event("partitions_assigned", timeout=60)
    time.sleep(4)  # longer than a heartbeat interval: a rebalance would have reached the others
    others = [i for i in range(3) if i != bouncee]
    return {
        "others_saw_rebalance": any(_rebalance_events(members[i]) != events_before[i] for i in others),
        "others_kept_partitions": all(members[i].assigned() == before[i] for i in others),
        "restarted_got_old_partitions": restarted.assigned() == before[bouncee],
        "restarted_assign_events": len(restarted.named("partitions_assigned")),
    }


def duplicate_instance_fencing(java: JavaTools, names) -> dict:
    """A second process with an instance id already in use: the newer one takes over and the older
    one is fenced (FENCED_INSTANCE_ID) and shuts down."""
    topic, group = names.topic(), names.group()
    create_topic(java.bootstrap, topic, partitions=2)
    first = java.verifiable_consumer(topic, group, instance_id=f"{group}-dup", session_timeout_ms=SESSION_MS,
                                     name=f"{group}-dup-first")
    first.wait_event("partitions_assigned", timeout=60)
    second = java.verifiable_consumer(topic, group, instance_id=f"{group}-dup", session_timeout_ms=SESSION_MS,
                                      name=f"{group}-dup-second")
    second.wait_event("partitions_assigned", timeout=60)
    _wait(lambda: first.proc.poll() is not None or second.proc.poll() is not None, 60, "one of the two to stop")
    time.sleep(3)
    fenced_text = first.stderr_tail(200) + second.stderr_tail(200)
    return {
        "first_stopped": first.proc.poll() is not None,
        "second_running": second.proc.poll() is None,
        "fenced_reported": "FencedInstanceId" in fenced_text or "fenced" in fenced_text.lower(),
    }


COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"


def dynamic_membership(java: JavaTools, names, assignor: str | None, kill_session_ms: int = 4000) -> dict:
    """Dynamic members: a second member joins, leaves cleanly, a third joins and crashes (SIGKILL,
    removed at its session timeout). Observed: assignment sizes after each step."""
    topic, group = names.topic(), names.group()
    create_topic(java.bootstrap, topic, partitions=4)
    facts = {}
    m0 = java.verifiable_consumer(topic, group, assignor=assignor, session_timeout_ms=kill_session_ms, name="dyn-0")
    _wait(lambda: len(m0.assigned()) == 4, 60, "m0 owns all")
    m1 = java.verifiable_consumer(topic, group, assignor=assignor, session_timeout_ms=kill_session_ms, name="dyn-1")
    _wait(lambda: len(m0.assigned()) == 2 and len(m1.assigned()) == 2, 60, "m0 and m1 share")
    facts["after_join"] = sorted([len(m0.assigned()), len(m1.assigned())])
    m1.stop()                                   # clean close: LeaveGroup
    _wait(lambda: len(m0.assigned()) == 4, 60, "m0 owns all after the leave")
    facts["after_leave"] = len(m0.assigned())
    m2 = java.verifiable_consumer(topic, group, assignor=assignor, session_timeout_ms=kill_session_ms, name="dyn-2")
    _wait(lambda: len(m0.assigned()) == 2 and len(m2.assigned()) == 2, 60, "m0 and m2 share")
    t0 = time.monotonic()
    m2.kill()                                   # crash: no LeaveGroup, session timeout removes it
    _wait(lambda: len(m0.assigned()) == 4, 60, "m0 owns all after the session timeout")
    facts["crash_detected_after_session_timeout"] = time.monotonic() - t0 >= kill_session_ms / 1000 * 0.8
    facts["after_crash"] = len(m0.assigned())
    return facts
