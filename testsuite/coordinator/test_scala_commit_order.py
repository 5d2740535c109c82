"""scala_order.scala_commit_order against the Scala maps themselves: testsuite/java/ScalaCommitOrder.java
fills a scala.collection.mutable.HashMap with TopicIdPartition keys, takes `toMap` and iterates it, as
Kafka 3.9's GroupCoordinatorAdapter.commitOffsets does, with the scala-library and kafka-clients jars
of the Kafka 3.9 install (scripts/setup --test installs it)."""

from __future__ import annotations

import subprocess

import pytest

from shim.coordinator.scala_order import scala_commit_order, scala_commit_topics
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
