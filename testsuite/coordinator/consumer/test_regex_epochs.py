"""A regex resolution bumps the group epoch only when it changes something
(GroupMetadataManager.handleRegularExpressionsResult): a regex that matches no topic leaves the
epoch where the heartbeat put it. The broker answered the same (testsuite/groups/test_assignor_static_vs_broker.py)."""

from __future__ import annotations

from testsuite.coordinator.consumer.harness import ConsumerHarness


def _state(h):
    d = h.describe_cg("g").groups[0]
    return d.group_state, d.group_epoch, d.assignment_epoch


def test_lone_regex_matching_nothing_keeps_epoch_1():
    h = ConsumerHarness({"foo": 2})
    r = h.cgh(topics=None, regex="nothing-.*")
    assert (r.error_code, r.member_epoch) == (0, 1)
    h.advance(0)                                       # the resolution runs
    assert h.cg().regex_topics["nothing-.*"] == frozenset()
    for _ in range(2):
        h.advance(600)
        r = h.cgh(epoch=1, topics=None, rebalance=-1, owned=None)
        assert (r.error_code, r.member_epoch) == (0, 1)
        assert _state(h) == ("Stable", 1, 1)


def test_names_plus_regex_matching_nothing():
    h = ConsumerHarness({"foo": 2})
    r = h.cgh(topics=["foo"], regex="nothing-.*")
    assert r.member_epoch == 2
    h.advance(0)
    for _ in range(2):
        h.advance(600)
        r = h.cgh(epoch=2, topics=None, rebalance=-1, owned={"foo": [0, 1]})
        assert r.member_epoch == 2
        assert _state(h) == ("Stable", 2, 2)


def test_regex_matching_a_topic_still_bumps():
    h = ConsumerHarness({"foo": 2})
    h.cgh(topics=None, regex="fo.*")
    h.advance(0)
    assert h.cg().group_epoch == 2


def test_static_rejoin_keeps_the_regex_resolution():
    """A static member with a regex leaves (-2) and rejoins with other names and no regex field: the
    successor inherits the regex, and its resolution survives the replacement (replaceMember leaves the
    regex to maybeUpdateRegularExpressions), so the regex's topic stays assigned. The broker answered
    the same (wire replay static-rejoin-keeps-regex-resolution)."""
    h = ConsumerHarness({"t1": 1, "t2": 3})
    r = h.cgh(instance="i1", topics=["t1", "t2"], regex="t2", rebalance=6000)
    assert h.names(r.assignment) == {"t1": [0], "t2": [0, 1, 2]}
    assert h.cgh(epoch=-2, instance="i1", topics=None, owned=None, rebalance=-1).member_epoch == -2
    h.advance(0)
    assert h.cg().regex_topics == {"t2": frozenset({"t2"})}
    r = h.cgh(instance="i1", topics=["tx"], regex=None, rack="rack-a")
    assert r.error_code == 0 and h.names(r.assignment) == {"t2": [0, 1, 2]}
    assert h.cg().members["m1"].subscribed_topic_regex == "t2" and h.cg().regex_topics == {"t2": frozenset({"t2"})}
