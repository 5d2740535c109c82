"""Regex resolution of a consumer group waits REGEX_BATCH_REFRESH_MIN_INTERVAL_MS (10 s) after the last
one (GroupMetadataManager.maybeUpdateRegularExpressions): a regex a heartbeat brings within that interval
is resolved by a later heartbeat, and only that resolution bumps the group epoch. The cases citing a
replay were found by the wire differential tester against a Kafka 4.3.1 broker; the replays are under
testsuite/compat/wire_replays/."""

from __future__ import annotations



def test_a_regex_brought_within_10s_of_the_last_resolution_waits(h):
    """GroupMetadataManager.maybeUpdateRegularExpressions: no resolution within 10 s
    (REGEX_BATCH_REFRESH_MIN_INTERVAL_MS) of the last one; a heartbeat after that resolves every
    subscribed regex, and only then the new one bumps the epoch (replay regex-refresh-min-interval.json,
    seed 5145)."""
    h.cgh(member_id="a", topics=None, regex="fo.*")
    h.advance(0)
    g = h.cg()
    assert g.group_epoch == 2 and g.regex_topics == {"fo.*": frozenset({"foo"})}
    h.advance(200)
    r = h.cgh(member_id="b", topics=["bar"], regex="ba.*")
    assert r.member_epoch == 3                             # its names bumped
    h.advance(0)
    assert "ba.*" not in g.regex_topics and g.group_epoch == 3
    h.advance(9_000)
    h.cgh(member_id="b", epoch=3, topics=None, rebalance=-1, owned=None)
    h.advance(0)
    assert "ba.*" not in g.regex_topics and g.group_epoch == 3
    h.advance(1_000)                                       # 10.2 s after the first resolution
    h.cgh(member_id="b", epoch=3, topics=None, rebalance=-1, owned=None)
    assert g.group_epoch == 3
    h.advance(0)
    assert g.regex_topics == {"fo.*": frozenset({"foo"}), "ba.*": frozenset({"bar"})}
    assert g.group_epoch == 4


def test_a_regex_replacing_the_last_resolved_one_waits_for_the_next_heartbeat(h):
    """GroupMetadataManager.maybeUpdateRegularExpressions: a member switching from the group's only
    resolved regex to a new one within 10 s of its resolution gets no resolution from that heartbeat
    (the old regex's tombstone is replayed after it); its next heartbeat finds no resolved regex and
    starts one (replay cg-regex-switch-waits.json, seed 6092)."""
    h.cgh(member_id="a", topics=["foo"], regex="fo.*")
    h.advance(0)
    g = h.cg()
    assert g.regex_topics == {"fo.*": frozenset({"foo"})}
    h.advance(200)
    e = g.members["a"].member_epoch
    r = h.cgh(member_id="a", epoch=e, topics=[], regex="ba.*", rebalance=-1, owned=None)
    assert r.error_code == 0
    h.advance(0)
    assert g.regex_topics == {}
    ge = g.group_epoch
    h.advance(3_000)
    r = h.cgh(member_id="a", epoch=r.member_epoch, topics=None, rebalance=-1, owned=None)
    assert r.error_code == 0 and g.group_epoch == ge
    h.advance(0)
    assert g.regex_topics == {"ba.*": frozenset({"bar"})} and g.group_epoch == ge + 1
