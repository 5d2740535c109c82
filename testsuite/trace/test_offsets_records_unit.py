"""The coordinator's records (`__consumer_offsets`, Kafka's own record formats built with the generated
codec) into coordinator events and the per-partition analysis: what the records show, and where
knowledge starts (no broker: the real-broker test is test_offsets_records_kafka.py)."""

from __future__ import annotations

import uuid

from kcodec.coordinator_records import encode_key, encode_value
from kcodec.generated.consumer_group_current_member_assignment_key import ConsumerGroupCurrentMemberAssignmentKey
from kcodec.generated.consumer_group_current_member_assignment_value import (
    ConsumerGroupCurrentMemberAssignmentValue, TopicPartitions)
from kcodec.generated.consumer_group_member_metadata_key import ConsumerGroupMemberMetadataKey
from kcodec.generated.consumer_group_member_metadata_value import ConsumerGroupMemberMetadataValue
from kcodec.generated.consumer_group_metadata_key import ConsumerGroupMetadataKey
from kcodec.generated.consumer_group_metadata_value import ConsumerGroupMetadataValue
from kcodec.generated.group_metadata_key import GroupMetadataKey
from kcodec.generated.group_metadata_value import GroupMetadataValue, MemberMetadata

from shim.trace.analyze.assignment import encode_assignment
from shim.trace.analyze.gaps import partition_gaps
from shim.trace.analyze.partitions import fold_partitions
from shim.trace.analyze.timeline import fold_group
from shim.trace.offsets_topic.history import RawRecord, RecordHistory

TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")
GROUP_METADATA, CG_METADATA, CG_MEMBER, CG_CURRENT = 2, 3, 5, 8


class Log:
    """One partition of __consumer_offsets, written in order."""

    def __init__(self, partition: int = 0, offset: int = 0):
        self.partition, self.offset, self.records = partition, offset, []

    def put(self, ts_ms: int, rtype: int, key, version: int | None, value) -> None:
        self.records.append(RawRecord(self.partition, self.offset, ts_ms, encode_key(rtype, key),
                                      None if value is None else encode_value(version, value)))
        self.offset += 1

    def skip(self, n: int) -> None:
        self.offset += n

    def history(self, **kw) -> RecordHistory:
        h = RecordHistory(**kw)
        for r in self.records:
            h.add(r)
        return h


def classic(log: Log, ts: int, gen: int, members: dict, protocol: str = "range", group: str = "g") -> None:
    """members: member id -> (instance id, {topic: [partitions]})."""
    log.put(ts, GROUP_METADATA, GroupMetadataKey(group=group), 4, GroupMetadataValue(
        protocol_type="consumer", generation=gen, protocol=protocol, leader=next(iter(members), None),
        current_state_timestamp=ts, members=[
            MemberMetadata(member_id=mid, group_instance_id=inst, client_id=f"client-{mid}", client_host="/127.0.0.1",
                           rebalance_timeout=30000, session_timeout=10000, subscription=b"",
                           assignment=encode_assignment(parts)) for mid, (inst, parts) in members.items()]))


def kinds(events):
    return [(e["event"], e["body"].get("member"), e["body"].get("generation") or e["body"].get("epoch"))
            for e in events]


def test_classic_generations_members_and_a_static_replacement_from_the_records():
    log = Log()
    classic(log, 1000, 1, {"A": ("a", {"t": [0]}), "B": (None, {"t": [1]})})
    classic(log, 2000, 1, {"A2": ("a", {"t": [0]}), "B": (None, {"t": [1]})})     # static rejoin, no rebalance
    classic(log, 5000, 2, {"A2": ("a", {"t": [0, 1]}), "C": (None, {})})          # B gone, C new
    events = log.history().events()
    assert kinds(events) == [
        ("member_joined", "A", None), ("member_joined", "B", None), ("generation", None, 1), ("assignment", None, 1),
        ("static_member_replaced", "A2", 1), ("assignment", None, 1),
        ("member_removed", "B", None), ("member_joined", "C", None), ("generation", None, 2), ("assignment", None, 2)]
    removed = next(e for e in events if e["event"] == "member_removed")
    assert removed["inferred"] and removed["body"]["reason"].startswith("inferred: not in generation 2's record")
    assert all(e["body"]["source"] == "records" for e in events)
    assert not any(e["body"].get("in_force") for e in events)       # read from offset 0, nothing compacted

    rounds, members, changes = fold_group("g", events)
    assert [r["generation"] for r in rounds] == [1, 2]
    assert rounds[1]["left"] == ["B: inferred: not in generation 2's record (it left, timed out or did not rejoin: "
                                 "the records do not say which)"]
    out = fold_partitions("g", events)
    segs = sorted((s["partition"], s["member"], s["from_wall_ms"], s["to_wall_ms"], s["end_kind"], s["end_unseen"])
                  for s in out["partition_owners"])
    assert segs == [(0, "A", 1000, 2000, "static_replaced", True), (0, "A2", 2000, 5000, "revoked", True),
                    (0, "A2", 5000, None, "trace_end", None), (1, "A2", 5000, None, "trace_end", None),
                    (1, "B", 1000, 5000, "removed", True)]
    gaps = partition_gaps(out["partition_owners"], 5000)
    at_gen2 = [g for g in gaps if not g["initial"]]
    assert {(g["partition"], g["previous_member"], g["duration_ms"]) for g in at_gen2} == {
        (0, "A", None), (0, "A2", None), (1, "B", None)}      # (A's static bounce: its close is not recorded)
    causes = [c for c in out["causes"] if c["generation"] == 2]
    assert [(c["kind"], c["member"], c["source"]) for c in causes] == [("removed", "B", "records"), ("joined", "C", "records")]


def test_cooperative_groups_keep_kept_partitions_and_show_the_moved_ones_gap():
    log = Log()
    classic(log, 1000, 1, {"A": (None, {"t": [0, 1]})}, protocol="cooperative-sticky")
    classic(log, 2000, 2, {"A": (None, {"t": [0]}), "B": (None, {})}, protocol="cooperative-sticky")
    classic(log, 2600, 3, {"A": (None, {"t": [0]}), "B": (None, {"t": [1]})}, protocol="cooperative-sticky")
    out = fold_partitions("g", log.history().events())
    segs = sorted((s["partition"], s["member"], s["from_wall_ms"], s["to_wall_ms"], s["end_kind"])
                  for s in out["partition_owners"])
    assert segs == [(0, "A", 1000, None, "trace_end"), (1, "A", 1000, 2000, "revoked"), (1, "B", 2600, None, "trace_end")]
    gap = [g for g in partition_gaps(out["partition_owners"], 3000) if not g["initial"]]
    assert [(g["partition"], g["duration_ms"]) for g in gap] == [(1, 600)]


def test_a_compacted_or_late_start_is_the_state_in_force_not_a_rebalance():
    log = Log()
    log.skip(40)        # offsets 0-39 compacted away
    classic(log, 1000, 7, {"A": ("a", {"t": [0]}), "B": (None, {"t": [1]})})
    classic(log, 4000, 8, {"A": ("a", {"t": [0, 1]})})
    h = log.history()
    events = h.events()
    first = events[0]
    assert first["event"] == "generation" and first["body"]["in_force"] and first["body"]["generation"] == 7
    assert not any(e["event"] == "member_joined" for e in events)     # A and B were there before: not joins
    rounds, _, _ = fold_group("g", events)
    assert [r["generation"] for r in rounds] == [8]                   # 7 was in force, not formed here
    out = fold_partitions("g", events)
    assert all(s["previous_owner_unknown"] for s in out["partition_owners"] if s["from_wall_ms"] == 1000)
    read = h.summary.as_dict()["partitions"][0]
    assert (read["start"], read["gaps"], read["complete_from"]) == (40, 0, 40)


def test_offsets_missing_inside_the_read_make_what_is_before_them_in_force():
    log = Log()
    classic(log, 1000, 3, {"A": (None, {"t": [0]})})
    log.skip(5)                                                       # compacted
    classic(log, 2000, 5, {"A": (None, {"t": [0]}), "B": (None, {"t": [1]})})
    log.skip(0)
    classic(log, 3000, 6, {"A": (None, {"t": [0, 1]})})
    h = log.history()
    events = h.events()
    gens = [(e["body"]["generation"], bool(e["body"].get("in_force"))) for e in events if e["event"] == "generation"]
    assert gens == [(3, True), (5, True), (6, False)]
    assert h.summary.as_dict()["partitions"][0]["missing_offsets"] == 5


def _member(log, ts, mid, inst=None, group="cg"):
    log.put(ts, CG_MEMBER, ConsumerGroupMemberMetadataKey(group_id=group, member_id=mid), 0,
            ConsumerGroupMemberMetadataValue(instance_id=inst, rack_id=None, client_id=f"c-{mid}", client_host="/h",
                                             subscribed_topic_names=["t"], subscribed_topic_regex=None,
                                             rebalance_timeout_ms=30000, server_assignor="uniform"))


def _epoch(log, ts, epoch, group="cg"):
    log.put(ts, CG_METADATA, ConsumerGroupMetadataKey(group_id=group), 0, ConsumerGroupMetadataValue(epoch=epoch))


def _current(log, ts, mid, epoch, prev, assigned, pending=(), group="cg"):
    tp = lambda ps: [TopicPartitions(topic_id=TOPIC_ID, partitions=list(ps))] if ps else []
    log.put(ts, CG_CURRENT, ConsumerGroupCurrentMemberAssignmentKey(group_id=group, member_id=mid), 0,
            ConsumerGroupCurrentMemberAssignmentValue(member_epoch=epoch, previous_member_epoch=prev, state=0,
                                                      assigned_partitions=tp(assigned),
                                                      partitions_pending_revocation=tp(pending)))


def test_a_kip848_join_revocation_and_leave_from_the_records():
    log = Log()
    _member(log, 1000, "m1")
    _epoch(log, 1000, 1)
    _current(log, 1010, "m1", 1, 0, [0, 1])
    _member(log, 3000, "m2")
    _epoch(log, 3000, 2)
    _current(log, 3010, "m1", 2, 1, [0], pending=[1])
    _current(log, 3010, "m2", 2, 0, [])
    _current(log, 3500, "m1", 2, 1, [0])
    _current(log, 3600, "m2", 2, 0, [1])
    log.put(9000, CG_MEMBER, ConsumerGroupMemberMetadataKey(group_id="cg", member_id="m2"), None, None)
    _epoch(log, 9000, 3)
    events = log.history(names={str(TOPIC_ID): "t"}).events()
    epochs = [e for e in events if e["event"] == "group_epoch"]
    assert [(e["body"]["epoch"], e["body"]["reason"]) for e in epochs] == [
        (1, "inferred: member m1 joined"), (2, "inferred: member m2 joined"), (3, "inferred: member m2 removed")]
    out = fold_partitions("cg", events)
    segs = sorted((s["partition"], s["member"], s["from_wall_ms"], s["to_wall_ms"], s["end_kind"], s["revoke_asked_wall_ms"],
                   s["end_unseen"]) for s in out["partition_owners"])
    assert segs == [(0, "m1", 1010, None, "trace_end", None, None), (1, "m1", 1010, 3500, "revoked", 3010, None),
                    (1, "m2", 3600, 9000, "removed", None, True)]
    gap = [g for g in partition_gaps(out["partition_owners"], 9000) if not g["initial"]]
    assert [(g["partition"], g["from_wall_ms"], g["duration_ms"]) for g in gap] == [(1, 3500, 100), (1, 9000, None)]
    assert [(c["generation"], c["kind"], c["member"]) for c in out["causes"]] == [
        (1, "joined", "m1"), (2, "joined", "m2"), (3, "removed", "m2")]


def test_unknown_versions_and_types_are_skipped_and_counted():
    log = Log()
    classic(log, 1000, 1, {"A": (None, {"t": [0]})})
    log.records.append(RawRecord(0, log.offset, 1001, encode_key(GROUP_METADATA, GroupMetadataKey(group="g")),
                                 b"\x00\x63" + b"\x00" * 8))
    log.offset += 1
    log.records.append(RawRecord(0, log.offset, 1002, b"\x00\x77\x00\x01g", b"\x00\x00"))
    h = log.history()
    assert len(h.events()) == 3
    skipped = h.summary.as_dict()["skipped"]
    assert sum(skipped.values()) == 2 and any("99" in k for k in skipped) and any("119" in k for k in skipped)


def _segment(records: list[RawRecord]) -> bytes:
    """Kafka's segment file layout: record batches back to back, each with its base offset."""
    import struct
    from shim.state.batch import encode_batch
    out = b""
    for r in records:
        batch = bytearray(encode_batch([(r.key, r.value)], r.ts_ms))
        struct.pack_into(">q", batch, 0, r.offset)
        out += bytes(batch)
    return out


def test_a_broker_log_dir_reads_as_the_topic_does(tmp_path):
    """`--log-dir`: the __consumer_offsets-N directories' segment files, in base-offset order, give the
    same events as the same records fetched; other topics' directories are not read."""
    from shim.offsets_import import import_log_dir
    from shim.trace.show import read_trace
    log = Log()
    classic(log, 1000, 1, {"A": (None, {"t": [0]})})
    classic(log, 2000, 2, {"A": (None, {"t": [0]}), "B": (None, {"t": [1]})})
    classic(log, 3000, 3, {"B": (None, {"t": [0, 1]})})
    d = tmp_path / "data" / "__consumer_offsets-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(_segment(log.records[:2]))
    (d / "00000000000000000002.log").write_bytes(_segment(log.records[2:]))
    (tmp_path / "data" / "other-topic-0").mkdir()
    (tmp_path / "data" / "other-topic-0" / "00000000000000000000.log").write_bytes(b"\x00" * 70)
    s = import_log_dir(tmp_path / "data", tmp_path / "out", groups=["g"])
    got = [r for r in read_trace(tmp_path / "out") if r.get("type") == "event"]
    want = log.history().events()
    assert [(e["event"], e["wall_ms"], e["body"].get("member")) for e in got] == \
        [(e["event"], e["wall_ms"], e["body"].get("member")) for e in want]
    assert s["consumer_offsets"]["partitions"][0]["log_start"] == 0 and s["events_by_kind"]["generation"] == 3


def test_a_kip848_static_member_replaced_is_not_a_removal():
    """The old member's tombstones, then the new member under the same instance id (GroupMetadataManager
    writes them together): one static replacement (no removal, no cause for a later bump); a static
    member whose tombstones are followed by anything else was removed."""
    log = Log()
    _member(log, 1000, "s1", inst="i1")
    _epoch(log, 1000, 1)
    _current(log, 1010, "s1", 1, 0, [0, 1])
    log.put(5000, CG_CURRENT, ConsumerGroupCurrentMemberAssignmentKey(group_id="cg", member_id="s1"), None, None)
    log.put(5000, CG_MEMBER, ConsumerGroupMemberMetadataKey(group_id="cg", member_id="s1"), None, None)
    _member(log, 5000, "s2", inst="i1")
    _current(log, 5000, "s2", 1, 0, [0, 1])
    _member(log, 8000, "d1")
    _epoch(log, 8000, 2)
    log.put(9000, CG_MEMBER, ConsumerGroupMemberMetadataKey(group_id="cg", member_id="s2"), None, None)
    _epoch(log, 9000, 3)
    events = log.history(names={str(TOPIC_ID): "t"}).events()
    assert [(e["event"], e["body"].get("member")) for e in events if e["event"] in (
        "static_member_replaced", "member_removed", "member_joined")] == [
        ("member_joined", "s1"), ("static_member_replaced", "s2"), ("member_joined", "d1"), ("member_removed", "s2")]
    out = fold_partitions("cg", events)
    assert [(c["generation"], c["kind"], c["member"]) for c in out["causes"]] == [
        (1, "joined", "s1"), (1, "static_replaced", "s2"), (2, "joined", "d1"), (3, "removed", "s2")]
    segs = sorted((s["member"], s["partition"], s["from_wall_ms"], s["to_wall_ms"], s["end_kind"], s["end_unseen"])
                  for s in out["partition_owners"])
    assert segs[:2] == [("s1", 0, 1010, 5000, "static_replaced", True), ("s1", 1, 1010, 5000, "static_replaced", True)]
    assert segs[2:] == [("s2", 0, 5000, 9000, "removed", True), ("s2", 1, 5000, 9000, "removed", True)]


def test_records_compacted_before_the_first_one_read_are_a_gap():
    """The cleaner removed every record from the log start up to the first left: the read asked for
    offset 0 and got 40 first, so offsets 0-39 are missing, and the first record is in force."""
    log = Log()
    log.skip(40)
    classic(log, 1000, 7, {"A": (None, {"t": [0]})})
    classic(log, 2000, 8, {"A": (None, {"t": [0]}), "B": (None, {"t": [1]})})
    h = RecordHistory()
    h.partition(0).read_from = 0
    for r in log.records:
        h.add(r)
    read = h.summary.as_dict()["partitions"][0]
    assert (read["gaps"], read["missing_offsets"], read["complete_from"]) == (1, 40, 40)
    gens = [(e["body"]["generation"], bool(e["body"].get("in_force"))) for e in h.events() if e["event"] == "generation"]
    assert gens == [(7, True), (8, False)]


def test_a_generation_replaced_before_its_sync_has_no_record_and_is_no_gap_in_history():
    """Generations 2 and 3 formed and were replaced before their leader's SyncGroup: no record. The
    record of 4 is still read against 1 (nothing was compacted), naming the generations in between."""
    log = Log()
    classic(log, 1000, 1, {"A": (None, {"t": [0, 1]})}, protocol="cooperative-sticky")
    classic(log, 3000, 4, {"A": (None, {"t": [0]}), "B": (None, {"t": [1]})}, protocol="cooperative-sticky")
    events = log.history().events()
    gens = [(e["body"]["generation"], e["body"].get("in_force"), e["body"].get("unrecorded"))
            for e in events if e["event"] == "generation"]
    assert gens == [(1, None, None), (4, None, [2, 3])]
    assert ("member_joined", "B") in [(e["event"], e["body"].get("member")) for e in events]
