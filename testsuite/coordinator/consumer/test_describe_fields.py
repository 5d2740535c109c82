"""ConsumerGroupDescribe member fields as the broker fills them (ConsumerGroupMember.asConsumerGroupDescribeMember),
checked against a real Kafka 4.3.1 broker (testsuite/groups/test_assignor_static_vs_broker.py)."""

from __future__ import annotations

import pytest

from testsuite.coordinator.consumer.harness import ConsumerHarness


@pytest.mark.parametrize("v", [0, 1])
def test_regex_of_a_member_without_one_is_empty_string(v):
    h = ConsumerHarness({"foo": 2})
    h.cgh(member_id="a", topics=["foo"])
    h.cgh(member_id="b", topics=[])
    h.cgh(member_id="c", topics=None, regex="fo.*")
    members = {m.member_id: m for m in h.describe_cg("g", v=v).groups[0].members}
    assert members["a"].subscribed_topic_regex == ""
    assert members["b"].subscribed_topic_regex == ""
    assert members["c"].subscribed_topic_regex == "fo.*"
    assert (members["a"].rack_id, members["a"].instance_id) == (None, None)
