"""GroupCoordinator.needs: what a request needs fetched from the broker before the coordinator can
decide it (topics to list, group configs to read), answered from the coordinator's own state, no
socket: the group service fetches exactly this before it feeds the request."""

from __future__ import annotations

from types import SimpleNamespace

from shim.coordinator.api_keys import CONSUMER_GROUP_HEARTBEAT, OFFSET_COMMIT, OFFSET_FETCH, TXN_OFFSET_COMMIT
from shim.coordinator.needs import ALL_TOPICS, NOTHING, Needs
from testsuite.coordinator.consumer.harness import ConsumerHarness


def _commit(*topics, by_id=None):
    return SimpleNamespace(topics=[SimpleNamespace(name=n, topic_id=by_id, partitions=[SimpleNamespace(partition_index=p)])
                                   for n, p in topics])


def _beat(gid="g", names=None, regex=None):
    return SimpleNamespace(group_id=gid, subscribed_topic_names=names, subscribed_topic_regex=regex)


def test_a_commit_of_known_partitions_needs_nothing_and_an_unknown_one_lists_the_named_topics():
    h = ConsumerHarness({"foo": 2})
    assert h.c.needs(OFFSET_COMMIT, 8, _commit(("foo", 1))) is NOTHING
    assert h.c.needs(OFFSET_COMMIT, 8, _commit(("foo", 2), ("bar", 0))) == Needs(topics=("foo", "bar"))
    assert h.c.needs(TXN_OFFSET_COMMIT, 4, _commit(("bar", 0))) == Needs(topics=("bar",))


def test_topics_named_by_id_list_every_topic():
    h = ConsumerHarness({"foo": 2})
    assert h.c.needs(OFFSET_COMMIT, 10, _commit(("", 0), by_id=h.tid("foo"))) is NOTHING
    unknown = _commit(("", 0), by_id=h.tid("foo").__class__(int=7))
    assert h.c.needs(OFFSET_COMMIT, 10, unknown) == ALL_TOPICS
    assert h.c.needs(TXN_OFFSET_COMMIT, 6, unknown) == ALL_TOPICS
    fetch = SimpleNamespace(groups=[SimpleNamespace(topics=unknown.topics)])
    assert h.c.needs(OFFSET_FETCH, 10, fetch) == ALL_TOPICS and h.c.needs(OFFSET_FETCH, 9, fetch) is NOTHING


def test_a_first_heartbeat_needs_the_groups_configs_once():
    h = ConsumerHarness({"foo": 2})
    assert h.c.needs(CONSUMER_GROUP_HEARTBEAT, 0, _beat(names=["foo"])) == Needs(group_configs=("g",))
    h.c.group_configs_updated("g", {}, now_ms=h.now)          # read: no overrides
    assert not h.c.needs(CONSUMER_GROUP_HEARTBEAT, 0, _beat(names=["foo"]))
    assert h.c.needs(CONSUMER_GROUP_HEARTBEAT, 0, _beat(names=["foo", "new"])) == Needs(topics=("foo", "new"))


def test_a_regex_new_to_the_group_lists_every_topic_until_resolved():
    h = ConsumerHarness({"foo": 2})
    h.c.group_configs_updated("g", {}, now_ms=h.now)
    assert h.c.needs(CONSUMER_GROUP_HEARTBEAT, 1, _beat(regex="fo.*")) == ALL_TOPICS
    assert h.c.needs(CONSUMER_GROUP_HEARTBEAT, 0, _beat(regex="fo.*")) is NOTHING    # v0 has no regex
    h.cgh(topics=None, regex="fo.*")
    h.advance(0)                                                # the group resolves it
    assert h.c.needs(CONSUMER_GROUP_HEARTBEAT, 1, _beat(regex="fo.*")) is NOTHING
    assert h.c.needs(CONSUMER_GROUP_HEARTBEAT, 1, _beat(regex="ba.*")) == ALL_TOPICS


def test_asking_changes_nothing():
    h = ConsumerHarness({"foo": 2})
    before = (dict(h.c.consumer_groups), set(h.c.group_configs.read), h.c.next_deadline())
    h.c.needs(CONSUMER_GROUP_HEARTBEAT, 1, _beat(regex="x.*"))
    h.c.needs(OFFSET_COMMIT, 8, _commit(("bar", 0)))
    assert (dict(h.c.consumer_groups), set(h.c.group_configs.read), h.c.next_deadline()) == before
