"""The same raw requests to the real broker and to kshim, the same answers (member ids chosen by the
test or left out): the server assignor chosen on a tie, a regex matching no topic, the
SubscribedTopicRegex of ConsumerGroupDescribe, classic static replacement (client id, session timeout)."""

from __future__ import annotations

import time

import pytest

from kcodec.generated.consumer_group_describe import ConsumerGroupDescribeRequest
from kcodec.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kcodec.generated.describe_groups import DescribeGroupsRequest
from kcodec.generated.find_coordinator import FindCoordinatorRequest
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from shim.compat.wire import Wire


COORDINATOR_LOADING = (14, 15, 16)   # a fresh broker creates __consumer_offsets on the first group request


def _call(boot: str, key: int, version: int, req, client_id: str = "kshim-test"):
    deadline = time.monotonic() + 30
    while True:
        with Wire(boot) as w:
            w.send(key, version, req, client_id=client_id)
            body = w.read_response(key, version)[1]
        code = body.groups[0].error_code if key in (15, 69) else body.error_code
        if code not in COORDINATOR_LOADING or time.monotonic() > deadline:
            return body
        _find_coordinator(boot)                # creates __consumer_offsets on a fresh broker
        time.sleep(0.5)


def _find_coordinator(boot: str) -> None:
    with Wire(boot) as w:
        w.send(10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["any"]))
        w.read_response(10, 4)


def _cgh(boot, group, member, epoch=0, names=None, regex=None, assignor=None, instance=None, client_id="kshim-test"):
    return _call(boot, 68, 1, ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, instance_id=instance,
        rebalance_timeout_ms=30_000 if epoch == 0 else -1, subscribed_topic_names=names,
        subscribed_topic_regex=regex, server_assignor=assignor, topic_partitions=[] if epoch == 0 else None),
        client_id)


def _coordinator_sees(boot: str, topics: list[str], timeout: float = 20.0) -> None:
    """Wait until the broker's group coordinator assigns partitions of every topic (it learns of a
    topic a moment after the topic is created; a group that subscribes before gets one epoch more)."""
    probe, member = f"probe-{topics[0]}", "probe-member-000000"
    r = _cgh(boot, probe, member, names=topics)
    deadline = time.monotonic() + timeout
    while len((r.assignment.topic_partitions if r.assignment else [])) < len(topics):
        assert time.monotonic() < deadline, f"the broker never assigned {topics}"
        time.sleep(0.3)
        r = _cgh(boot, probe, member, epoch=r.member_epoch)
    _cgh(boot, probe, member, epoch=-1)


def _cgd(boot, group, version=1):
    (g,) = _call(boot, 69, version, ConsumerGroupDescribeRequest(group_ids=[group])).groups
    return g


def _targets(g) -> dict:
    return {m.member_id: sorted((tp.topic_name, tuple(tp.partitions)) for tp in m.target_assignment.topic_partitions)
            for m in g.members}


def _assignor_tie(boot, group, topics, first, second, trigger):
    a, b = "member-a-0000000000", "member-b-0000000000"
    ra = _cgh(boot, group, a, names=topics, assignor=first)
    rb = _cgh(boot, group, b, names=topics, assignor=second)
    time.sleep(1.3)                                        # group.consumer.assignment.interval.ms
    if trigger == "a":
        _cgh(boot, group, a, epoch=ra.member_epoch)
    else:
        _cgh(boot, group, b, epoch=rb.member_epoch)
    g = _cgd(boot, group)
    shape = sorted(len(ps) for ps in _targets(g).values())  # range: [0, 2], uniform: [1, 1]
    return g.assignor_name, g.group_epoch, g.assignment_epoch, shape


@pytest.mark.parametrize("first, second, trigger", [("range", "uniform", "a"), ("range", "uniform", "b")])
def test_server_assignor_tie(kafka, kshim, names, new_topic, first, second, trigger):
    topics = [new_topic(1), new_topic(1)]
    _coordinator_sees(kafka.bootstrap, topics)
    got = {where: _assignor_tie(boot, names.group(), topics, first, second, trigger)
           for where, boot in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap))}
    assert got["kshim"] == got["broker"]
    assert got["broker"][3] == ([0, 2] if trigger == "a" else [1, 1])


def _regex_nothing(boot, group, topic):
    out = []
    for member, kw in (("member-a-0000000000", dict(regex="nothing-matches-.*")),
                       ("member-b-0000000000", dict(names=[topic], regex="nothing-matches-either-.*"))):
        r = _cgh(boot, group + member[7], member, **kw)
        time.sleep(0.6)
        r2 = _cgh(boot, group + member[7], member, epoch=r.member_epoch)
        g = _cgd(boot, group + member[7])
        out.append((r.member_epoch, r2.member_epoch, g.group_state, g.group_epoch, g.assignment_epoch))
    return out


def test_regex_matching_nothing(kafka, kshim, names, new_topic):
    topic = new_topic(1)
    _coordinator_sees(kafka.bootstrap, [topic])
    got = {where: _regex_nothing(boot, names.group(), topic)
           for where, boot in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap))}
    assert got["kshim"] == got["broker"] == [(1, 1, "Stable", 1, 1), (2, 2, "Stable", 2, 2)]


def _describe_regex(boot, group, topic, version):
    _cgh(boot, group, "member-a-0000000000", names=[topic])
    _cgh(boot, group, "member-b-0000000000", names=[topic], regex="nothing-.*", instance=group + "-i")
    g = _cgd(boot, group, version)
    return sorted((m.member_id, m.subscribed_topic_regex, m.instance_id, m.rack_id, tuple(m.subscribed_topic_names))
                  for m in g.members)


@pytest.mark.parametrize("version", [0, 1])
def test_describe_member_regex_and_nullable_fields(kafka, kshim, names, new_topic, version):
    topic = new_topic(1)
    got = {where: _describe_regex(boot, names.group(), topic, version)
           for where, boot in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap))}
    strip = [[(m, rx, None if i is None else "i", rack, t) for m, rx, i, rack, t in got[w]] for w in got]
    assert strip[0] == strip[1]
    assert [m[1] for m in strip[0]] == ["", "nothing-.*"]


# ------------------------------------------------------------------------ classic static replacement
def _join(group, member, instance, session, rebalance=30_000):
    return JoinGroupRequest(group_id=group, session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                            member_id=member, group_instance_id=instance, protocol_type="consumer",
                            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01")])


def _members(boot, group):
    (g,) = _call(boot, 15, 5, DescribeGroupsRequest(groups=[group])).groups
    return g.group_state, sorted((m.group_instance_id or "", m.client_id) for m in g.members)


def _stable_replacement(boot, group):
    """Static i1 (client-S, session 4 s) Stable; client-S2 replaces it with session 1 s and stays silent."""
    inst = group + "-i1"
    first = _call(boot, 11, 9, _join(group, "", inst, 4_000), "client-S")
    _call(boot, 14, 5, SyncGroupRequest(group_id=group, generation_id=first.generation_id, member_id=first.member_id,
                                        group_instance_id=inst, protocol_type="consumer", protocol_name="range",
                                        assignments=[SyncGroupRequestAssignment(member_id=first.member_id)]),
          "client-S")
    r = _call(boot, 11, 9, _join(group, "", inst, 1_000), "client-S2")
    out = [(r.error_code, r.generation_id), _members(boot, group)]
    time.sleep(2.5)                                       # past the request's 1 s, within the old 4 s
    out.append(_members(boot, group))
    time.sleep(3.0)
    out.append(_members(boot, group))
    return [(o[0], [(i.replace(group, ""), c) for i, c in o[1]]) if isinstance(o[1], list) else o for o in out]


def test_classic_static_replacement_in_stable_group(kafka, kshim, names):
    got = {where: _stable_replacement(boot, names.group())
           for where, boot in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap))}
    assert got["kshim"] == got["broker"]
    assert got["broker"][1:] == [("Stable", [("-i1", "client-S")]), ("Stable", [("-i1", "client-S")]),
                                 ("Empty", [])]
