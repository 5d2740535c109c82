"""shim.coordinator.assignors against Kafka 4.3.1's own UniformAssignor / RangeAssignor and re2j.

One JVM per session runs testsuite/java/AssignorCheck.java. Seeded generated groups evolve over
several steps (members join and leave, subscriptions change, topics are created, deleted and grown),
each step's Python result being fed back to both sides as the current target assignment. Both sides
get the same member order (sorted member ids) and the same map orders (javaorder.py), so the
assignments must be equal exactly, for the homogeneous and heterogeneous paths of both assignors.
Regexes: validity, error description and full-match results must equal re2j's.
"""

from __future__ import annotations

import os
import random
import uuid

import pytest

from shim.coordinator.assignors import MemberSubscription, TopicMetadata, assign
from shim.coordinator.assignors import topic_regex
from shim.coordinator.assignors.javaorder import uuid_key
from testsuite.harness.jsonjvm import JsonJvm, start_json_jvm

pytestmark = pytest.mark.java

SEEDS = int(os.environ.get("KSHIM_ASSIGNOR_SEEDS", "40"))
STEPS = 8


class JavaAssignors(JsonJvm):
    def call(self, **req) -> dict:
        answer = super().call(**req)
        assert "error" not in answer, answer["error"]
        return answer


@pytest.fixture(scope="module")
def jvm(tmp_path_factory):
    helper = start_json_jvm("AssignorCheck", tmp_path_factory)
    helper.__class__ = JavaAssignors
    yield helper
    helper.close()


# --- assignors -----------------------------------------------------------------------------------

def kafka_assign(jvm, assignor, members, topics, homogeneous):
    req = {
        "op": "assign", "assignor": assignor, "homogeneous": homogeneous,
        "topics": [{"id": str(t.topic_id), "partitions": t.partitions} for t in topics.values()],
        "members": [{
            "id": m.member_id, "instance": m.instance_id, "rack": m.rack_id,
            "topics": [str(t) for t in sorted(m.topic_ids, key=uuid_key)],
            "assignment": [[str(t), sorted(m.assignment[t])] for t in sorted(m.assignment, key=uuid_key)],
        } for m in (members[k] for k in sorted(members))],
    }
    out = jvm.call(**req)["assignment"]
    return {mid: {uuid.UUID(t): frozenset(ps) for t, ps in a.items()} for mid, a in out.items()}


def normalized(result, members):
    """Every member present, no empty partition sets (Kafka leaves members out of an empty result)."""
    return {m: {t: ps for t, ps in result.get(m, {}).items() if ps} for m in members}


class Group:
    """A generated group that changes step by step."""

    def __init__(self, rng: random.Random, homogeneous: bool):
        self.rng = rng
        self.homogeneous = homogeneous
        self.topics: dict[uuid.UUID, TopicMetadata] = {}
        self.subs: dict[str, frozenset[uuid.UUID]] = {}
        self.instances: dict[str, str | None] = {}
        self.current: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
        for _ in range(rng.randint(1, 6)):
            self.add_topic()
        for _ in range(rng.randint(1, 12)):
            self.add_member()

    def add_topic(self):
        rng = self.rng
        tid = uuid.UUID(int=rng.getrandbits(128))
        self.topics[tid] = TopicMetadata(tid, f"t{len(self.topics)}", rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 30]))
        if self.homogeneous and rng.random() < 0.7:
            self.subs = {m: s | {tid} for m, s in self.subs.items()}

    def random_subscription(self):
        if self.homogeneous and self.subs:
            return next(iter(self.subs.values()))
        ids = list(self.topics)
        return frozenset(self.rng.sample(ids, self.rng.randint(0 if self.rng.random() < 0.1 else 1, len(ids))))

    def add_member(self):
        rng = self.rng
        mid = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
                      for _ in range(rng.randint(1, 22)))
        self.subs[mid] = self.random_subscription()
        self.instances[mid] = f"i{rng.randint(0, 30)}" if rng.random() < 0.3 else None
        self.current.setdefault(mid, {})

    def step(self):
        rng = self.rng
        action = rng.choice(["join", "join", "leave", "leave", "resubscribe", "create", "delete", "grow",
                             "none"])
        if action == "join" or not self.subs:
            for _ in range(rng.randint(1, 3)):
                self.add_member()
        elif action == "leave" and len(self.subs) > 1:
            mid = rng.choice(sorted(self.subs))
            del self.subs[mid], self.instances[mid], self.current[mid]
        elif action == "resubscribe" and self.topics:
            if self.homogeneous:
                new = frozenset(rng.sample(list(self.topics), rng.randint(1, len(self.topics))))
                self.subs = {m: new for m in self.subs}
            else:
                self.subs[rng.choice(sorted(self.subs))] = self.random_subscription()
        elif action == "create":
            self.add_topic()
        elif action == "delete" and len(self.topics) > 1:
            tid = rng.choice(list(self.topics))
            del self.topics[tid]
            self.subs = {m: s - {tid} for m, s in self.subs.items()}
        elif action == "grow" and self.topics:
            tid = rng.choice(list(self.topics))
            t = self.topics[tid]
            self.topics[tid] = TopicMetadata(tid, t.name, t.partitions + rng.randint(1, 7))

    def members(self):
        return {m: MemberSubscription(m, self.instances[m], None, self.subs[m], self.current[m])
                for m in self.subs}


@pytest.mark.parametrize("assignor", ["uniform", "range"])
@pytest.mark.parametrize("homogeneous", [True, False], ids=["homogeneous", "heterogeneous"])
def test_generated_groups_match_kafka(jvm, assignor, homogeneous):
    compared = 0
    for seed in range(SEEDS):
        group = Group(random.Random(f"{assignor}-{homogeneous}-{seed}"), homogeneous)
        for step in range(STEPS):
            members = group.members()
            ours = assign(assignor, members, group.topics, homogeneous=homogeneous)
            theirs = kafka_assign(jvm, assignor, members, group.topics, homogeneous)
            assert normalized(ours, members) == normalized(theirs, members), (seed, step)
            compared += 1
            group.current = {m: dict(a) for m, a in ours.items()}
            group.step()
    assert compared == SEEDS * STEPS


def test_large_heterogeneous_group_matches_kafka(jvm):
    """Overlapping subscriptions large enough for several balancing rounds."""
    rng = random.Random(7)
    tids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(20)]
    topics = {t: TopicMetadata(t, f"t{i}", rng.randint(1, 40)) for i, t in enumerate(tids)}
    current: dict[str, dict] = {}
    ids = [f"member-{i:03d}" for i in range(60)]
    for round_ in range(4):
        members = {m: MemberSubscription(m, None, None, frozenset(random.Random(m).sample(tids, 5)),
                                         current.get(m, {})) for m in ids}
        ours = assign("uniform", members, topics, homogeneous=False)
        assert normalized(ours, members) == normalized(kafka_assign(jvm, "uniform", members, topics, False),
                                                       members)
        current = ours
        ids = ids[5:] + [f"late-{round_}-{i}" for i in range(7)]


@pytest.mark.parametrize("topic_count", [12, 24, 40])
def test_many_topics_homogeneous_matches_kafka(jvm, topic_count):
    """The builder's HashSet<Uuid> order over 32/64-bucket tables (12 and 24 topics are where JDK 17
    and JDK 21 size `new HashSet<>(c)` differently; the helper runs on the JDK found here)."""
    rng = random.Random(topic_count)
    tids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(topic_count)]
    topics = {t: TopicMetadata(t, f"t{i}", rng.randint(1, 9)) for i, t in enumerate(tids)}
    ids = [f"m{i}" for i in range(40)]
    current: dict[str, dict] = {}
    for step in range(5):
        members = {m: MemberSubscription(m, None, None, frozenset(tids), current.get(m, {})) for m in ids}
        ours = assign("uniform", members, topics, homogeneous=True)
        assert normalized(ours, members) == normalized(kafka_assign(jvm, "uniform", members, topics, True),
                                                       members), step
        current = ours
        ids = ids[: len(ids) * 2 // 3] if step % 2 == 0 else ids + [f"n{step}-{i}" for i in range(15)]


# --- regex ---------------------------------------------------------------------------------------

TOPICS = ["orders", "orders-eu", "orders.eu", "Orders", "payments_1", "payments_22", "a", "aa", "",
          "__consumer_offsets", "t-1", "t.1", "x" * 40]
NOTABLE = [r"orders.*", r"orders", r"order", r"(orders|payments)_?.*", r"payments_\d+", r"[a-z]+",
           r"\C", r"[\C]", r"a\C", r"\Qa\C\E", r"(abc", r"abc)", r"[abc", r"a**", r"a{1001}", r"a{2,1}",
           r"\Z", r"\z", r"(?i)ORDERS", r"(?=x)", r"(?P<n>a)", r"(?<n>a)", r"(?<=a)", r"(?<é>a)", r"[[:]a]", r"{*", r"a{,2}", r"{{2}", r"(?P<n>a)(?P<n>b)", r"\1",
           r"\8", r"\0", r"[[:alpha:]]+", r"[[:foo:]]", r"\pL+", r"\p{Greek}", r"\p{Foo}", r"[z-a]", "\\",
           r"x{2}{3}", r"(?U)a+", r"(?s).", r"\x{110000}", r"a++", r"(?#c)", r".{0,1000}", r"\b", r"^orders$",
           r"(a{10}){100}", r"\Q[\E", r"[]a]", r"[^]a]+", r"(?:", r"()"]
ALPHABET = ["a", "b", ".", "*", "+", "?", "(", ")", "[", "]", "{", "}", "|", "^", "$", "\\", "d", "w",
            "C", "Q", "E", "p", "P", "L", ":", "-", "0", "1", "9", ",", "<", ">", "=", "!", "_", "i",
            "s", "z", "Z", "x", "{2}", "[[:", ":]]", "(?", "\\C", "\\p{"]


def _check_regex(jvm, pattern: str):
    theirs = jvm.call(op="regex", pattern=pattern, topics=TOPICS)
    try:
        ours = sorted(topic_regex.resolve(pattern, TOPICS))
    except topic_regex.InvalidRegularExpression as err:
        assert not theirs["ok"], (pattern, "rejected here, accepted by re2j", err.description)
        assert err.description == theirs["description"], pattern
        assert err.error_code == 128
        assert err.message == (f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
                               f"{theirs['description']}.")
        return False
    assert theirs["ok"], (pattern, "accepted here, rejected by re2j", theirs.get("description"))
    assert ours == sorted(theirs["matches"]), pattern
    return True


def test_notable_regexes_match_re2j(jvm):
    accepted = [_check_regex(jvm, p) for p in NOTABLE]
    assert any(accepted) and not all(accepted)


def test_nested_repetition_limit_is_a_documented_difference(jvm):
    """RE2 caps nested counted repetitions at a product of 1000; re2j does not (regex.py docstring)."""
    assert jvm.call(op="regex", pattern="(a{100}){100}", topics=[])["ok"]
    with pytest.raises(topic_regex.InvalidRegularExpression) as err:
        topic_regex.validate("(a{100}){100}")
    assert err.value.description == "invalid repeat count"


def test_generated_regexes_match_re2j(jvm):
    rng = random.Random(848)
    outcomes = set()
    for _ in range(int(os.environ.get("KSHIM_REGEX_SAMPLES", "3000"))):
        pattern = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 8)))
        outcomes.add(_check_regex(jvm, pattern))
    assert outcomes == {True, False}
