"""Server-side assignors and the topic regex, pure Python (no broker, no JVM): balance, stickiness,
determinism and edge cases. Equality with Kafka's own classes: test_assignors_java.py."""

from __future__ import annotations

import random
import uuid
from collections import Counter

import pytest

from shim.coordinator.assignors import (AssignorError, MemberSubscription, TopicMetadata, assign,
                                        is_homogeneous)
from shim.coordinator.assignors import topic_regex
from shim.coordinator.assignors.javaorder import hash_set_order, string_keys, uuid_key

RNG = random.Random(8)
T = [uuid.UUID(int=RNG.getrandbits(128)) for _ in range(6)]


def topics_of(*counts):
    return {T[i]: TopicMetadata(T[i], f"t{i}", n) for i, n in enumerate(counts)}


def group(n, topic_ids, current=None, instances=None):
    current = current or {}
    instances = instances or {}
    return {f"m{i:03d}": MemberSubscription(f"m{i:03d}", instances.get(f"m{i:03d}"), None,
                                            frozenset(topic_ids), current.get(f"m{i:03d}", {}))
            for i in range(n)}


def owners(result):
    c = Counter((t, p) for a in result.values() for t, ps in a.items() for p in ps)
    assert all(v == 1 for v in c.values()), "a partition assigned twice"
    return set(c)


def sizes(result):
    return [sum(len(ps) for ps in a.values()) for a in result.values()]


def every_partition(topics, ids):
    return {(t, p) for t in ids for p in range(topics[t].partitions)}


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_edge_cases(assignor):
    topics = topics_of(3, 5)
    assert assign(assignor, {}, topics) == {}
    # members subscribed to nothing, or to topics that exist nowhere in the request
    empty = group(3, [])
    assert assign(assignor, empty, topics) == {m: {} for m in empty}
    # more members than partitions: every partition once, the rest empty, everyone present
    many = group(10, [T[0]])
    out = assign(assignor, many, topics)
    assert set(out) == set(many)
    assert owners(out) == every_partition(topics, [T[0]])
    assert sorted(sizes(out)) == [0] * 7 + [1] * 3
    # a subscribed topic missing from the metadata is Kafka's PartitionAssignorException
    with pytest.raises(AssignorError):
        assign(assignor, group(2, [T[5]]), topics)


def test_unknown_assignor():
    with pytest.raises(AssignorError, match="unsupported assignor"):
        assign("sticky", group(1, [T[0]]), topics_of(1))


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_homogeneous_balance(assignor):
    topics = topics_of(7, 11, 3)
    for n in (1, 2, 3, 5, 8, 21, 40):
        out = assign(assignor, group(n, T[:3]), topics)
        assert owners(out) == every_partition(topics, T[:3])
        if assignor == "uniform":
            assert max(sizes(out)) - min(sizes(out)) <= 1
        else:  # per topic ranges: each topic balanced, contiguous, ordered by member
            for t in T[:3]:
                per = [sorted(out[m].get(t, ())) for m in sorted(out)]
                assert max(map(len, per)) - min(map(len, per)) <= 1
                flat = [p for ps in per for p in ps]
                assert flat == list(range(topics[t].partitions))


def test_range_co_partitions_and_orders_static_members_first():
    topics = topics_of(5, 5)
    members = group(3, T[:2], instances={"m002": "a-instance", "m000": "b-instance"})
    out = assign("range", members, topics)
    for m in out:
        assert out[m][T[0]] == out[m][T[1]]   # same partition numbers from both topics
    assert out["m002"][T[0]] == {0, 1}          # static "a-instance" first
    assert out["m000"][T[0]] == {2, 3}
    assert out["m001"][T[0]] == {4}             # dynamic last


def _evolve(assignor, homogeneous, seed):
    rng = random.Random(seed)
    topics = topics_of(*(rng.randint(1, 20) for _ in range(5)))
    ids = list(topics)
    subs = {}
    current = {}
    for step in range(12):
        for _ in range(rng.randint(0 if subs else 1, 3)):
            subs[f"m{rng.getrandbits(32):08x}"] = (frozenset(ids) if homogeneous
                                                   else frozenset(rng.sample(ids, rng.randint(1, 5))))
        if len(subs) > 2 and rng.random() < 0.5:
            del subs[rng.choice(sorted(subs))]
        members = {m: MemberSubscription(m, None, None, s, current.get(m, {})) for m, s in subs.items()}
        out = assign(assignor, members, topics, homogeneous=homogeneous)
        yield topics, members, out
        current = out


@pytest.mark.parametrize("seed", range(30))
def test_uniform_sticky_balanced_and_stable(seed):
    for topics, members, out in _evolve("uniform", True, seed):
        assert owners(out) == every_partition(topics, topics)
        assert max(sizes(out)) - min(sizes(out)) <= 1
        total = sum(t.partitions for t in topics.values())
        quota = total // len(members)
        for m, sub in members.items():   # every member keeps its current partitions up to the quota
            kept = sum(len(out[m].get(t, frozenset()) & ps) for t, ps in sub.assignment.items())
            assert kept >= min(quota, sum(len(ps) for ps in sub.assignment.values()))
        # feeding the result back changes nothing
        again = {m: MemberSubscription(m, None, None, s.topic_ids, out[m]) for m, s in members.items()}
        assert assign("uniform", again, topics, homogeneous=True) == out
    for topics, members, out in _evolve("uniform", False, seed):
        assert owners(out) == {(t, p) for s in members.values() for t in s.topic_ids
                               for p in range(topics[t].partitions)}
        for m, a in out.items():
            assert set(a) <= members[m].topic_ids
        again = {m: MemberSubscription(m, None, None, s.topic_ids, out[m]) for m, s in members.items()}
        assert assign("uniform", again, topics, homogeneous=False) == out


def test_heterogeneous_uniform_balances_disjoint_subscriber_groups():
    topics = topics_of(10, 10, 30)
    members = {**{f"a{i}": MemberSubscription(f"a{i}", None, None, frozenset(T[:2]), {}) for i in range(3)},
               **{f"b{i}": MemberSubscription(f"b{i}", None, None, frozenset([T[2]]), {}) for i in range(4)}}
    out = assign("uniform", members, topics)
    assert sorted(sum(len(p) for p in out[m].values()) for m in out if m[0] == "a") == [6, 7, 7]
    assert sorted(sum(len(p) for p in out[m].values()) for m in out if m[0] == "b") == [7, 7, 8, 8]


@pytest.mark.parametrize("assignor", ["uniform", "range"])
@pytest.mark.parametrize("homogeneous", [True, False])
def test_result_does_not_depend_on_input_map_order(assignor, homogeneous):
    for topics, members, out in _evolve(assignor, homogeneous, 99):
        keys = list(members)
        random.Random(1).shuffle(keys)
        shuffled_topics = dict(reversed(list(topics.items())))
        assert assign(assignor, {k: members[k] for k in keys}, shuffled_topics, homogeneous=homogeneous) == out


def test_is_homogeneous_follows_kafka_subscription_type():
    assert is_homogeneous([])
    assert is_homogeneous([(["a", "b"], None), (["b", "a"], "")])
    assert not is_homogeneous([(["a"], None), (["a", "b"], None)])
    assert is_homogeneous([([], "t.*"), ([], "t.*")])
    assert not is_homogeneous([([], "t.*"), ([], "u.*")])
    assert not is_homogeneous([(["t1"], "t.*"), (["t1"], "t.*")])   # names and a regex: heterogeneous
    assert not is_homogeneous([([], "t.*"), (["t1"], None)])


def test_is_homogeneous_selects_the_algorithm():
    # identical resolved ids, but Kafka may call the group heterogeneous (e.g. a regex and names):
    # the two algorithms place the extra partition differently
    topics = topics_of(3)
    members = group(2, [T[0]])
    assert assign("uniform", members, topics) == assign("uniform", members, topics, homogeneous=True)
    assert assign("uniform", members, topics, homogeneous=True) == {"m000": {T[0]: {0}}, "m001": {T[0]: {1, 2}}}
    assert assign("uniform", members, topics, homogeneous=False) == {"m000": {T[0]: {0, 2}}, "m001": {T[0]: {1}}}


def test_java_orders():
    a = uuid.UUID(int=(1 << 127) | 5)        # negative most significant long in Java
    b = uuid.UUID(int=(1 << 64) | 5)
    assert sorted([b, a], key=uuid_key) == [a, b]
    # ids whose Java hash is their index land in buckets 0..n-1: HashSet order = hash order
    ids = [uuid.UUID(int=i << 64) for i in (9, 3, 14, 1)]
    assert hash_set_order(ids) == [uuid.UUID(int=i << 64) for i in (1, 3, 9, 14)]
    ids17 = [uuid.UUID(int=i << 64) for i in (17, 1)]   # 17 and 1 share bucket 1 of 16
    assert hash_set_order(ids17) == [uuid.UUID(int=1 << 64), uuid.UUID(int=17 << 64)]
    key = string_keys(["\U0001F600", "\uFB01"])
    assert sorted(["\uFB01", "\U0001F600"], key=key) == ["\U0001F600", "\uFB01"]   # surrogates first
    assert sorted(["\uFB01", "\U0001F600"]) == ["\uFB01", "\U0001F600"]


def test_topic_regex_full_match_and_errors():
    names = ["orders", "orders-eu", "xorders", "__consumer_offsets", "payments"]
    assert topic_regex.resolve("orders.*", names) == {"orders", "orders-eu"}
    assert topic_regex.resolve("order", names) == frozenset()            # no partial match
    assert topic_regex.resolve(".*", names) == set(names)                # internal topics included
    assert topic_regex.matches("(?i)PAYMENTS", "payments")
    for bad, description in [("(abc", "missing closing )"), ("a)", "regexp/syntax: internal error"),
                             (r"\C", "invalid escape sequence"), ("(?=x)", "invalid or unsupported Perl syntax"),
                             ("a**", "invalid nested repetition operator"), ("{*", "invalid nested repetition operator"),
                             ("(?P<n>a)(?P<n>b)", "duplicate capture group name"),
                             ("[[:]a]", "invalid character class range"), ("a{1001}", "invalid repeat count")]:
        with pytest.raises(topic_regex.InvalidRegularExpression) as err:
            topic_regex.validate(bad)
        assert err.value.error_code == 128
        assert err.value.description == description, bad
        assert err.value.message == f"SubscribedTopicRegex `{bad}` is not a valid regular expression: {description}."
    # the \C check skips quoted text and classes
    assert topic_regex.matches(r"\Qa\C\E", "a\\C")


def test_java_hash_set_order_of_topic_names_is_the_brokers():
    """ConsumerGroupDescribe lists a member's subscribed topic names in HashSet order; the broker
    (4.3.1) described ["kw6da8648e-t1", "kw6da8648e-t2"] as t2, t1."""
    from shim.coordinator.assignors.javaorder import java_hash_set_order
    assert java_hash_set_order(["kw6da8648e-t1", "kw6da8648e-t2"]) == ["kw6da8648e-t2", "kw6da8648e-t1"]
    assert java_hash_set_order(["kw6da8648e-t2", "kw6da8648e-t1"]) == ["kw6da8648e-t2", "kw6da8648e-t1"]
    # "Aa" and "BB" share String.hashCode (2112): one bucket, insertion order kept; duplicates dropped
    assert java_hash_set_order(["BB", "Aa", "BB"]) == ["BB", "Aa"]
    assert java_hash_set_order(["Aa", "BB"]) == ["Aa", "BB"]


def test_java_int_set_order_wraps_at_the_table_size():
    """HashSet<Integer> iterates by bucket (Integer.hashCode is the value): ascending below the
    table size (16 for a few partitions), 17 before 3 in a 16-bucket table."""
    from shim.coordinator.assignors.javaorder import java_int_set_order
    assert java_int_set_order([2, 0, 1]) == [0, 1, 2]
    assert java_int_set_order([3, 17]) == [17, 3]
