"""kcodec.records against batches built by an independent implementation (kafka-python)."""

import gzip
import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from kcodec.errors import DecodeError
from kcodec.records import (Compression, ControlType, CorruptRecords, CrcMismatch,
                            DecompressionFailed, TimestampType, TruncatedRecords,
                            UnsupportedCompression, UnsupportedRecordFormat, crc32c,
                            decode_batch, decode_batches, decompress, iter_batches)

CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4,
          Compression.ZSTD]


def sample_records(n=50):
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else f"key-{i % 5}".encode()
        value = None if i % 11 == 5 else (b"value-%d " % i) * (i % 13 + 1)
        headers = [] if i % 3 else [("h1", b"v1"), ("empty", b""), ("nul", None)]
        out.append((i, 1_700_000_000_000 + i * 17, key, value, headers))
    return out


def build(codec, records, *, transactional=False, pid=-1, epoch=-1, seq=-1, base_offset=0):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=int(codec),
                                  is_transactional=transactional, producer_id=pid,
                                  producer_epoch=epoch, base_sequence=seq, batch_size=1 << 24)
    for offset, ts, key, value, headers in records:
        b.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)
    return bytes(buf)


def set_attributes(buf, set_bits=0, clear_bits=0):
    buf = bytearray(buf)
    attrs = (struct.unpack_from(">h", buf, 21)[0] | set_bits) & ~clear_bits
    struct.pack_into(">h", buf, 21, attrs)
    struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    return bytes(buf)


def check(batch, records, base_offset=0):
    assert batch.records_count == len(records) == len(batch.records)
    for rec, (off, ts, key, value, headers) in zip(batch.records, records):
        assert rec.offset == base_offset + off and rec.offset_delta == off
        assert rec.timestamp == ts
        assert (rec.key, rec.value) == (key, value)
        assert [(h.key, h.value) for h in rec.headers] == headers
    assert batch.last_offset == base_offset + records[-1][0]
    assert batch.base_timestamp == records[0][1]
    assert batch.max_timestamp == max(r[1] for r in records)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name.lower())
def test_each_codec(codec):
    recs = sample_records()
    data = build(codec, recs, transactional=True, pid=4242, epoch=3, seq=17, base_offset=1000)
    batch = decode_batch(data)
    assert batch.compression == codec  # data is compressible: kafka-python keeps the codec
    assert batch.magic == 2 and batch.is_transactional and not batch.is_control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4242, 3, 17)
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    assert batch.size_in_bytes == len(data) and batch.crc == crc32c(data[21:])
    check(batch, recs, base_offset=1000)
    d = batch.to_dict()
    assert d["compression"] == codec.name.lower() and len(d["records"]) == len(recs)


def test_multiple_batches_and_truncated_tail():
    recs = sample_records(20)
    parts = [build(c, [(o - i * 4, *rest) for o, *rest in recs[i * 4:(i + 1) * 4]],
                   base_offset=i * 4) for i, c in enumerate(CODECS)]
    blob = b"".join(parts)
    batches = decode_batches(blob)
    assert [b.base_offset for b in batches] == [0, 4, 8, 12, 16]
    assert [r.offset for b in batches for r in b.records] == list(range(20))
    for cut in (1, 11, 12, 60, len(parts[-1]) - 1):
        tail = blob[:len(blob) - cut]
        assert len(decode_batches(tail)) == 4
        with pytest.raises(TruncatedRecords):
            decode_batches(tail, strict=True)
    assert decode_batches(b"") == [] and decode_batches(None) == []
    assert len(decode_batches(memoryview(blob))) == 5


def test_control_batch_commit_and_abort():
    for ctype in (ControlType.ABORT, ControlType.COMMIT):
        key = struct.pack(">hh", 0, ctype)
        value = struct.pack(">hi", 0, 7)
        data = build(Compression.NONE, [(0, 1234, key, value, [])], transactional=True,
                     pid=99, epoch=1, seq=-1, base_offset=50)
        batch = decode_batch(set_attributes(data, set_bits=0x20))
        assert batch.is_control and batch.is_transactional
        ctl = batch.records[0].control
        assert (ctl.version, ctl.type, ctl.type_name) == (0, ctype, ctype.name)
        assert (ctl.value_version, ctl.coordinator_epoch) == (0, 7)
        assert batch.records[0].to_dict()["control"]["type"] == ctype.name
    bad = build(Compression.NONE, [(0, 1, b"\x00", b"", [])])
    with pytest.raises(CorruptRecords):
        decode_batch(set_attributes(bad, set_bits=0x20))


def test_log_append_time_and_delete_horizon_flags():
    recs = sample_records(3)
    data = set_attributes(build(Compression.NONE, recs), set_bits=0x08 | 0x40)
    batch = decode_batch(data)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME and batch.has_delete_horizon
    assert {r.timestamp for r in batch.records} == {batch.max_timestamp}


def test_crc_mismatch_and_no_verify():
    data = bytearray(build(Compression.NONE, sample_records(3)))
    data[data.index(b"value-2")] ^= 0x20
    with pytest.raises(CrcMismatch) as ei:
        decode_batch(bytes(data))
    assert ei.value.offset == 17 and ei.value.expected != ei.value.actual
    assert len(decode_batch(bytes(data), verify_crc=False).records) == 3


def test_legacy_and_unknown_magic():
    legacy = struct.pack(">qi", 0, 26) + struct.pack(">Ibbqi", 0, 1, 0, 0, -1) + b"\xff" * 8
    with pytest.raises(UnsupportedRecordFormat, match="legacy"):
        decode_batches(legacy)
    data = bytearray(build(Compression.NONE, sample_records(2)))
    data[16] = 3
    with pytest.raises(UnsupportedRecordFormat):
        decode_batches(bytes(data))


def test_bad_codec_and_corrupt_compressed_body():
    data = build(Compression.NONE, sample_records(2))
    with pytest.raises(UnsupportedCompression):
        decode_batch(set_attributes(data, set_bits=0x05))
    for codec in CODECS[1:]:
        with pytest.raises(DecompressionFailed):
            decode_batch(set_attributes(data, set_bits=int(codec)))


def test_count_mismatch_and_bad_lengths():
    data = bytearray(build(Compression.NONE, sample_records(3)))
    for count in (2, 4, -1):
        d = bytearray(data)
        struct.pack_into(">i", d, 57, count)
        with pytest.raises(CorruptRecords):
            decode_batch(set_attributes(d))
    with pytest.raises(CorruptRecords):
        decode_batch(struct.pack(">qi", 0, 10) + b"\x00" * 10)


def test_decompress_helpers_and_limits():
    payload = b"abc" * 10000
    assert decompress(Compression.GZIP, gzip.compress(payload) + gzip.compress(b"x")) == \
        payload + b"x"
    with pytest.raises(DecompressionFailed, match="limit"):
        decompress(Compression.GZIP, gzip.compress(payload), max_size=1000)
    import cramjam
    raw = bytes(cramjam.snappy.compress_raw(payload))
    assert decompress(Compression.SNAPPY, raw) == payload
    with pytest.raises(DecompressionFailed, match="limit"):
        decompress(Compression.SNAPPY, raw, max_size=1000)
    with pytest.raises(DecompressionFailed, match="limit"):
        decompress(Compression.ZSTD, bytes(cramjam.zstd.compress(payload)), max_size=1000)
    assert issubclass(DecompressionFailed, DecodeError)


def test_iter_is_lazy():
    good = build(Compression.NONE, sample_records(2))
    it = iter_batches(good + b"\x00" * 8 + struct.pack(">i", 5) + b"\x00" * 60)
    assert next(it).records_count == 2
    with pytest.raises(CorruptRecords):
        next(it)
