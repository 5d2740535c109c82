"""CI's `kshim compat` subset: the quick scenarios (a static bounce, offsets commit/fetch/reset/
delete, transactional offsets) run by the product's runner on the real broker and through kshim;
any difference fails, and the broker's own observations must be the documented behaviour."""

from __future__ import annotations

from shim.compat.diff import compare
from shim.compat.report import table
from shim.compat.runner import Target, run_all
from shim.compat.scenarios import plan


def test_quick_subset_kshim_matches_kafka(kafka, kshim, kafka_install, tmp_path):
    todo = plan(None, ["kafka-python", "librdkafka"], ["classic"], quick=True)
    assert {s.name for s, _, _ in todo} == {"static-bounce", "offsets", "txn-offsets"}
    targets = [Target("Kafka", kafka.bootstrap), Target("kshim", kshim.bootstrap)]
    run_all(targets, kafka_install, todo, tmp_path)
    broker, through = targets[0].results, targets[1].results
    diffs = compare(broker, through)
    assert not diffs, table(["Kafka", "kshim"], diffs)
    bounce = broker["static-bounce [kafka-python, classic]"]
    assert bounce["restarted_got_old_partitions"] and not bounce["others_saw_rebalance"], bounce
    txn = broker["txn-offsets [librdkafka, classic]"]
    assert txn["committed_after_abort"] == {0: -1001, 1: -1001} and txn["committed_after_commit"] == {0: 10, 1: 10}
    assert txn["downstream_read_committed"] == 20
    offsets = broker["offsets [librdkafka, classic]"]
    assert offsets["client_committed"] == {0: 5, 1: 7, 2: -1001}
    assert offsets["delete_while_subscribed"]["partitions"] == ["GROUP_SUBSCRIBED_TO_TOPIC"]


def test_regex_subscription_kshim_matches_kafka(kafka, kshim, kafka_install, tmp_path):
    """KIP-848 regex plus a topic name created a moment before: the first heartbeat assigns the named
    topic (kshim lists a subscription's unknown topics first), the regex's matches come once it is
    resolved after that heartbeat (librdkafka's test 0045 checks this order)."""
    todo = plan(["cg-regex"], ["wire"], ["consumer"])
    targets = [Target("Kafka", kafka.bootstrap), Target("kshim", kshim.bootstrap)]
    run_all(targets, kafka_install, todo, tmp_path)
    broker, through = targets[0].results, targets[1].results
    assert not compare(broker, through), table(["Kafka", "kshim"], compare(broker, through))
    seen = broker["cg-regex [wire, consumer]"]
    assert seen["first_heartbeat_partitions"] == 1 and seen["assigned_partitions"] == 4, seen
