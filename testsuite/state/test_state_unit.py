"""Durable state without a broker: the key/value format, the RecordBatch v2 encoder (decoded back
with kcodec.records) and GroupCoordinator.replay (a coordinator rebuilt from another one's records
behaves like it)."""

from __future__ import annotations

import struct
import uuid

import pytest

from kcodec.records import decode_batch, decode_batches
from shim.coordinator import errors as E
from shim.coordinator.classic_group import EMPTY, STABLE
from shim.coordinator.state_records import (GroupMetadataRecord, GroupTombstone, MemberRecord, OffsetRecord,
                                      OffsetTombstone)
from shim.state import format as fmt
from shim.state.batch import encode_batch, zigzag_varint
from testsuite.coordinator.harness import SESSION, Harness

GROUP = GroupMetadataRecord("g1", "consumer", 7, "range", "m-1", 1234, (
    MemberRecord("m-1", "i-1", "cid", "/10.0.0.1", 30000, 10000, b"sub1", b"asg1"),
    MemberRecord("m-2", None, "cid2", "/10.0.0.2", 20000, 6000, b"", b"asg2")))
RECORDS = [GROUP, GroupMetadataRecord("simple", None, 0, None, None, 5, ()), GroupTombstone("g1"),
           OffsetRecord("g1", "topic-é", 3, 42, 7, "meta", 99, None),
           OffsetRecord("g1", "t", 0, -1, -1, "", 1, 555), OffsetTombstone("g1", "t", 0)]


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: type(r).__name__)
def test_format_round_trip(rec):
    key, value = fmt.encode(rec)
    assert (value is None) == isinstance(rec, (GroupTombstone, OffsetTombstone))
    assert fmt.decode(key, value) == rec


def test_format_versions_and_layout():
    key, value = fmt.encode(OffsetRecord("g", "t", 2, 10, 1, "m", 5, None))
    assert key == struct.pack(">hh", 1, 1) + b"g" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 2)
    assert value == struct.pack(">hqih", 2, 10, 1, 1) + b"m" + struct.pack(">qq", 5, -1) + bytes(16)
    tid = uuid.UUID("0123456789abcdef0123456789abcdef")
    rec = OffsetRecord("g", "t", 2, 10, 1, "m", 5, 77, tid)
    k2, v2 = fmt.encode(rec)
    assert v2.endswith(tid.bytes) and fmt.decode(k2, v2) == rec
    # value v1 (written before topic ids) is still read: no topic id
    v1 = struct.pack(">hqih", 1, 10, 1, 1) + b"m" + struct.pack(">qq", 5, -1)
    assert fmt.decode(key, v1) == OffsetRecord("g", "t", 2, 10, 1, "m", 5, None, None)
    gkey, _ = fmt.encode(GroupTombstone("g"))
    assert gkey == struct.pack(">hh", 2, 1) + b"g"
    with pytest.raises(fmt.StateFormatError):
        fmt.decode(struct.pack(">hh", 9, 1) + b"g", None)
    with pytest.raises(fmt.StateFormatError):
        fmt.decode(gkey, struct.pack(">h", 5))


def test_partition_is_javas_hashcode_abs_mod_n():
    # "group".hashCode() == 98629247 in Java; a negative hash ("polygenelubricants" == MIN_VALUE)
    assert fmt.partition_for("group", 50) == 98629247 % 50
    assert fmt.partition_for("polygenelubricants", 50) == 0
    assert all(0 <= fmt.partition_for(f"g{i}", 4) < 4 for i in range(100))


def test_zigzag_varints():
    assert zigzag_varint(0) == b"\x00" and zigzag_varint(-1) == b"\x01" and zigzag_varint(1) == b"\x02"
    assert zigzag_varint(300) == b"\xd8\x04"


def test_batch_decodes_with_kcodec_and_crc_checks():
    pairs = [fmt.encode(r) for r in RECORDS]
    blob = encode_batch(pairs, 1_700_000_000_000)
    batch = decode_batch(blob, verify_crc=True)
    assert (batch.magic, batch.attributes, batch.producer_id, batch.records_count) == (2, 0, -1, len(pairs))
    assert batch.last_offset_delta == len(pairs) - 1
    assert [(r.key, r.value) for r in batch.records] == pairs
    assert [r.offset for r in batch.records] == list(range(len(pairs)))
    assert all(r.timestamp == 1_700_000_000_000 for r in batch.records)
    assert [fmt.decode(r.key, r.value) for r in batch.records] == RECORDS
    two = decode_batches(blob + encode_batch([(b"k", b"v" * 300)], 1))
    assert len(two) == 2 and two[1].records[0].value == b"v" * 300
    corrupt = bytearray(blob)
    corrupt[-1] ^= 1
    with pytest.raises(Exception, match="crc"):
        decode_batch(bytes(corrupt))


def test_batch_large_sizes_null_keys_and_headers_decode():
    """Lengths and record indexes past the varint table (16 KiB), a null key and value, headers:
    the encoder's other branches, read back by kcodec with the CRC checked."""
    big = bytes(range(256)) * 80                      # 20,480 bytes: a 3-byte varint length
    pairs = [(None, b"v"), (b"k", None), (b"k" * 17000, big), (b"h", b"x", [("epoch", b"7"), ("e", b"")])]
    batch = decode_batch(encode_batch(pairs, 5), verify_crc=True)
    assert [(r.key, r.value) for r in batch.records] == [(p[0], p[1]) for p in pairs]
    assert [(h.key, h.value) for h in batch.records[3].headers] == [("epoch", b"7"), ("e", b"")]
    many = decode_batch(encode_batch([(b"k%d" % i, b"") for i in range(16500)], 5), verify_crc=True)
    assert many.records_count == 16500 and many.last_offset_delta == 16499
    assert [r.offset for r in many.records[16380:16390]] == list(range(16380, 16390))
    assert many.records[-1].key == b"k16499"


def _replayed(h: Harness, now: int) -> Harness:
    """A fresh coordinator fed every record `h` wrote so far (as kshim does at start)."""
    r = Harness()
    r.now = now
    r.topics = r.c.topics = h.topics
    for rec in h.c.written:
        r.c.replay(fmt.decode(*fmt.encode(rec)), now_ms=now)
    return r


def test_replay_restores_a_stable_group_and_expires_absent_members():
    h = Harness(topics={"t": 2})
    (a, b), gen = h.stable_group(n=2, instances=["i1", None])
    assert h.commit("g", {("t", 0): 5, ("t", 1): 6}, generation=gen, member_id=a) == {("t", 0): 0, ("t", 1): 0}
    r = _replayed(h, h.now + 100_000)
    g, orig = r.group("g"), h.group("g")
    assert g.state == STABLE and g.generation_id == gen and g.leader_id == orig.leader_id
    assert g.protocol_name == orig.protocol_name and g.static_members == {"i1": a}
    assert {m: x.assignment for m, x in g.members.items()} == {m: x.assignment for m, x in orig.members.items()}
    assert r.fetch("g", {"t": [0, 1]})[1] == {("t", 0): (5, 7, "", 0), ("t", 1): (6, 7, "", 0)}
    # a member heartbeating after the load keeps its place; the silent one expires after its session
    r.advance(SESSION // 2)
    assert r.heartbeat("g", a, gen, instance="i1").error_code == E.NONE
    r.advance(SESSION // 2 + 1)
    assert b not in r.group("g").members
    assert r.heartbeat("g", a, gen, instance="i1").error_code == E.REBALANCE_IN_PROGRESS


def test_replay_is_last_value_wins_with_tombstones():
    h = Harness(topics={"t": 1, "u": 1})
    h.commit("simple", {("t", 0): 1})
    h.commit("simple", {("t", 0): 2, ("u", 0): 9})
    h.offset_delete("simple", {"u": [0]})
    h.commit("gone", {("t", 0): 3})
    h.delete("gone")
    r = _replayed(h, 0)
    assert r.group("simple").state == EMPTY
    assert r.fetch("simple", None)[1] == {("t", 0): (2, 7, "", 0)}
    assert r.group("gone") is None and r.fetch("gone", None)[1] == {}
    # compaction keeps only the last record per key: the same state comes back
    last = {}
    for rec in h.c.written:
        key, value = fmt.encode(rec)
        last.pop(key, None)
        last[key] = value
    c = Harness()
    for key, value in last.items():
        c.c.replay(fmt.decode(key, value), now_ms=0)
    assert c.fetch("simple", None)[1] == r.fetch("simple", None)[1] and c.group("gone") is None


def test_replay_of_offsets_without_group_record_makes_a_simple_group():
    r = Harness()
    r.c.replay(OffsetRecord("orphan", "t", 0, 11, -1, "", 1, None), now_ms=0)
    assert r.group("orphan").state == EMPTY
    assert r.fetch("orphan", {"t": [0]})[1][("t", 0)][0] == 11
    assert r.c.written == []
