"""scala_order.scala_commit_order against the Scala maps themselves: testsuite/java/ScalaCommitOrder.java
fills a scala.collection.mutable.HashMap with TopicIdPartition keys, takes `toMap` and iterates it, as
Kafka 3.9's GroupCoordinatorAdapter.commitOffsets does, with the scala-library and kafka-clients jars
of the Kafka 3.9 install (scripts/setup --test installs it)."""

from __future__ import annotations

import subprocess

import pytest

from shim.coordinator.scala_order import scala_commit_order, scala_commit_topics, scala_string_order
from shim.localkafka.home import kafka_home
from testsuite.harness.jsonjvm import JAVA_SOURCES

pytestmark = pytest.mark.java


def _pairs(text: str) -> list[tuple[str, int]]:
    return [(item.rsplit(":", 1)[0], int(item.rsplit(":", 1)[1])) for item in text.strip(",").split(",")]


def test_order_is_the_scala_maps_order():
    libs = kafka_home("3.9.1") / "libs"
    if not libs.is_dir():
        pytest.fail(f"Kafka 3.9.1 missing in {libs}: run scripts/setup --test")
    out = subprocess.run(["java", "-cp", f"{libs}/*", str(JAVA_SOURCES / "ScalaCommitOrder.java"), "7", "400"],
                         check=True, capture_output=True, text=True, encoding="utf-8").stdout.splitlines()
    assert len(out) == 400
    sizes = set()
    for line in out:
        request, answer = line.split(" ")
        req = _pairs(request)
        sizes.add(len(set(req)))
        assert scala_commit_order(req) == _pairs(answer), request
    assert min(sizes) <= 4 < 12 < max(sizes)     # Map1..Map4, and a mutable table that grew


def test_topics_at_their_first_partition():
    # five keys: a CHAMP map; each topic once, its partitions in the map's order
    order = scala_commit_order([("a", 0), ("b", 0), ("a", 1), ("b", 1), ("c", 0)])
    topics = scala_commit_topics([("a", 0), ("b", 0), ("a", 1), ("b", 1), ("c", 0)])
    assert [t for t, _ in topics] == list(dict.fromkeys(t for t, _ in order))
    assert sorted((t, p) for t, ps in topics for p in ps) == sorted(order)
    assert scala_commit_order([("a", 0), ("a", 0)]) == [("a", 0)]


def test_member_order_is_the_scala_maps_order():
    """A classic group's members under Kafka 3.9 (GroupMetadata.members, a Scala mutable.HashMap):
    ClassicGroup.member_order against that map filled and emptied the same way."""
    from shim.coordinator.classic_group import ClassicGroup, ClassicGroups, ClassicMember
    from shim.coordinator.config import CoordinatorConfig
    libs = kafka_home("3.9.1") / "libs"
    out = subprocess.run(["java", "-cp", f"{libs}/*", str(JAVA_SOURCES / "ScalaCommitOrder.java"), "3", "300",
                          "members"], check=True, capture_output=True, text=True).stdout.splitlines()
    groups = ClassicGroups(CoordinatorConfig(release="3.9", consumer_protocol=False))
    shared_bucket = 0
    for n, line in enumerate(out):
        added, order = (part.strip(",").split(",") if part.strip(",") else [] for part in line.split(" "))
        groups[f"g{n}"] = g = ClassicGroup(f"g{n}")
        last = None
        for mid in added:
            if mid == "-":
                g.remove(last)
            else:
                g.add(ClassicMember(member_id=mid, instance_id=None, client_id="c", client_host="h", session_timeout_ms=1,
                                    rebalance_timeout_ms=1, protocol_type="consumer", protocols=[]))
                last = mid
        assert [m.member_id for m in g.member_order()] == order, line
        if "-" not in added:
            assert scala_string_order(added) == order, line
        shared_bucket += len({hash_bucket(m) for m in order}) < len(order)
    assert shared_bucket > 20          # the cases where a bucket's own order shows


def hash_bucket(member_id: str) -> int:
    from shim.coordinator.assignors.javaorder import java_string_hash
    h = java_string_hash(member_id)
    return (h ^ (h >> 16)) & 15
