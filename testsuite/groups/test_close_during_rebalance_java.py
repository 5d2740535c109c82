"""The Java consumer's close() during a rebalance, through kshim and directly against the real broker.

A classic member's close() sends LeaveGroup on its coordinator connection, where its JoinGroup is
still parked, and waits for both answers (`AbstractCoordinator.close`: `awaitPendingRequests`). The
broker reads that LeaveGroup only after answering the JoinGroup (one request at a time per
connection), which happens when the silent other member's session expires; so close() takes about
that long on the broker, and must through kshim too."""

from __future__ import annotations

import struct
import threading
import time

import pytest

from kcodec import api
from kcodec.generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.sync_group import SyncGroupRequest

from shim.compat.pymembers import create_topic
from shim.compat.wire import Wire

pytestmark = pytest.mark.timing   # compares wall-clock measurements: runs alone (scripts/test)

JOIN, HEARTBEAT, SYNC, DESCRIBE, FIND = 11, 12, 14, 15, 10
SILENT_SESSION_MS = 6000


def _describe(w: Wire, group: str) -> tuple[str, int]:
    w.send(DESCRIBE, 0, api.REQUESTS[DESCRIBE](groups=[group]))
    (g,) = w.read_response(DESCRIBE, 0)[1].groups
    return g.group_state, len(g.members)


def close_during_rebalance(tools, bootstrap: str, group: str, topic: str) -> dict:
    """A raw member S joins first and heartbeats until the Java consumer's JoinGroup is parked waiting
    for S to rejoin; then S goes silent and the consumer is closed (SIGTERM: VerifiableConsumer's
    shutdown hook calls close())."""
    meta = struct.pack(">h", 0) + ConsumerProtocolSubscription(topics=[topic], user_data=None).encode(0)
    with Wire(bootstrap) as s, Wire(bootstrap) as look:
        for _ in range(100):      # the broker creates and loads __consumer_offsets on first use
            look.send(FIND, 3, api.REQUESTS[FIND](key=group, key_type=0))
            if look.read_response(FIND, 3)[1].error_code == 0:
                break
            time.sleep(0.2)
        s.send(JOIN, 3, JoinGroupRequest(
            group_id=group, session_timeout_ms=SILENT_SESSION_MS, rebalance_timeout_ms=SILENT_SESSION_MS,
            member_id="", protocol_type="consumer", protocols=[JoinGroupRequestProtocol(name="range", metadata=meta)]))
        joined = s.read_response(JOIN, 3)[1]
        s.send(SYNC, 3, SyncGroupRequest(group_id=group, generation_id=joined.generation_id,
                                         member_id=joined.member_id, assignments=[]))
        assert s.read_response(SYNC, 3)[1].error_code == 0
        consumer = tools.verifiable_consumer(topic, group, name=f"closer-{group}")
        deadline = time.monotonic() + 90
        while _describe(look, group) != ("PreparingRebalance", 2):    # the consumer's join is parked
            assert time.monotonic() < deadline, "the consumer's JoinGroup never arrived"
            s.send(HEARTBEAT, 3, api.REQUESTS[HEARTBEAT](group_id=group, generation_id=joined.generation_id,
                                                         member_id=joined.member_id))
            s.read_response(HEARTBEAT, 3)
            time.sleep(0.3)
        time.sleep(0.5)            # the join is in flight a moment: close() is called during it
        t0 = time.monotonic()
        stopper = threading.Thread(target=consumer.stop, kwargs={"timeout": 60})
        stopper.start()
        consumer.wait_event("shutdown_complete", timeout=60)
        close_s = time.monotonic() - t0
        stopper.join()
        return {"close_s": close_s, "after": _describe(look, group)}


def test_close_during_a_rebalance_takes_as_long_as_on_the_broker(both, names, kafka):
    topic = names.topic()
    create_topic(kafka.bootstrap, topic, 1)
    facts = {where: close_during_rebalance(tools, tools.bootstrap, names.group(where), topic)
             for where, tools in both.items()}
    print(f"close() durations: broker {facts['broker']['close_s']:.2f}s, kshim {facts['kshim']['close_s']:.2f}s")
    seen = {where: (f["close_s"] > SILENT_SESSION_MS / 2000, f["after"]) for where, f in facts.items()}
    # the LeaveGroup waits behind the parked JoinGroup, answered when the silent member's session
    # expires; then the consumer (leader of the new generation) leaves and the group is Empty
    assert seen["kshim"] == seen["broker"] == (True, ("Empty", 0)), facts
    assert abs(facts["kshim"]["close_s"] - facts["broker"]["close_s"]) < 2.5, facts
