"""Decoder of Kafka record batches (message format v2, "magic 2").

Used to show what Produce requests and Fetch responses carry (traces); it is not
on the proxy hot path.  A records blob is a sequence of batches::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 (crc32c of attributes..end) | attributes int16 | lastOffsetDelta int32 |
    baseTimestamp int64 | maxTimestamp int64 | producerId int64 | producerEpoch int16 |
    baseSequence int32 | recordsCount int32 | records (compressed as a whole)

and each record is ``length varint | attributes int8 | timestampDelta varlong |
offsetDelta varint | key (varint length, -1 = null) | value (same) | headers``.

Compression: gzip (stdlib), snappy (Kafka's xerial block framing, or raw snappy),
lz4 (frame format) and zstd, the last three through ``cramjam``.  Legacy message
sets (magic 0 and 1) are reported with :class:`UnsupportedRecordFormat`.
Every problem with the input raises a :class:`RecordsError` (a ``DecodeError``).

This module reads batches and their records; the values it makes and the errors are in
``record_types``, decompression in ``record_compression`` (both re-exported here).
"""

from __future__ import annotations

import struct
from typing import Iterator

from crc32c import crc32c as _crc32c

from .record_compression import DEFAULT_MAX_DECOMPRESSED_SIZE, decompress
from .record_types import (LOG_OVERHEAD, Compression, ControlRecord, ControlType, CorruptRecords, CrcMismatch,
                           DecompressionFailed, Header, Record, RecordBatch, RecordsError, TimestampType,
                           TruncatedRecords, UnsupportedCompression, UnsupportedRecordFormat)

__all__ = [
    "Compression", "TimestampType", "ControlType",
    "RecordsError", "CorruptRecords", "TruncatedRecords", "CrcMismatch",
    "UnsupportedRecordFormat", "UnsupportedCompression", "DecompressionFailed",
    "Header", "ControlRecord", "Record", "RecordBatch",
    "crc32c", "decompress", "iter_batches", "decode_batches", "decode_batch",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
]

HEADER_SIZE = 61           # full v2 batch header
_MAGIC_OFFSET = 16
_CRC_START = 21            # crc covers attributes .. end of batch
_HEAD = struct.Struct(">qiibIhiqqqhii")
_BE_I32 = struct.Struct(">i")


def crc32c(data, value: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data``, as used by record batches."""
    return _crc32c(data, value)


# --- records ------------------------------------------------------------------------

def _varint(buf, pos: int, limit: int, max_bytes: int) -> tuple[int, int]:
    """Zig-zag varint at ``pos``; ``max_bytes`` 5 for int32, 10 for int64."""
    raw = 0
    shift = 0
    end = min(pos + max_bytes, limit)
    while pos < end:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    if pos >= limit:
        raise CorruptRecords("record data ends inside a varint", "Record", None, pos)
    raise CorruptRecords(f"varint longer than {max_bytes} bytes", "Record", None, pos)


def _parse_control(rec: Record, offset: int) -> ControlRecord:
    key = rec.key
    if key is None or len(key) < 4:
        raise CorruptRecords("control record key shorter than 4 bytes", "ControlRecord", "key",
                             offset)
    version, ctype = struct.unpack_from(">hh", key)
    if version < 0:
        raise CorruptRecords(f"invalid control record key version {version}", "ControlRecord",
                             "version", offset)
    ctl = ControlRecord(version, ctype)
    if ctype in (ControlType.ABORT, ControlType.COMMIT):
        value = rec.value
        if value is None or len(value) < 6:
            raise CorruptRecords("end transaction marker value shorter than 6 bytes",
                                 "EndTxnMarker", "value", offset)
        ctl.value_version, ctl.coordinator_epoch = struct.unpack_from(">hi", value)
        if ctl.value_version < 0:
            raise CorruptRecords(f"invalid end transaction marker version {ctl.value_version}",
                                 "EndTxnMarker", "version", offset)
    return ctl


def _parse_records(buf, pos: int, end: int, batch: RecordBatch) -> list[Record]:
    count = batch.records_count
    if count < 0:
        raise CorruptRecords(f"negative records count {count}", "RecordBatch", "recordsCount")
    log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    control = batch.is_control
    base_offset, base_ts = batch.base_offset, batch.base_timestamp
    records: list[Record] = []
    for _ in range(count):
        if pos >= end:
            raise CorruptRecords(f"batch declares {count} records but holds {len(records)}",
                                 "RecordBatch", "recordsCount", pos)
        start = pos
        length, pos = _varint(buf, pos, end, 5)
        if length < 0 or pos + length > end:
            raise CorruptRecords(f"invalid record length {length}", "Record", "length", start)
        rec_end = pos + length
        if pos >= rec_end:
            raise CorruptRecords("empty record", "Record", "attributes", pos)
        attributes = buf[pos]
        pos += 1
        ts_delta, pos = _varint(buf, pos, rec_end, 10)
        off_delta, pos = _varint(buf, pos, rec_end, 5)
        fields = []
        for name in ("key", "value"):
            size, pos = _varint(buf, pos, rec_end, 5)
            if size < 0:
                fields.append(None)
                continue
            if pos + size > rec_end:
                raise CorruptRecords(f"{name} length {size} overruns the record", "Record",
                                     name, pos)
            fields.append(bytes(buf[pos:pos + size]))
            pos += size
        nheaders, pos = _varint(buf, pos, rec_end, 5)
        if nheaders < 0:
            raise CorruptRecords(f"negative header count {nheaders}", "Record", "headers", pos)
        headers = []
        for _ in range(nheaders):
            ksize, pos = _varint(buf, pos, rec_end, 5)
            if ksize < 0 or pos + ksize > rec_end:
                raise CorruptRecords(f"invalid header key length {ksize}", "Record",
                                     "headerKey", pos)
            hkey = str(buf[pos:pos + ksize], "utf-8", "replace")
            pos += ksize
            vsize, pos = _varint(buf, pos, rec_end, 5)
            if vsize < 0:
                headers.append(Header(hkey, None))
                continue
            if pos + vsize > rec_end:
                raise CorruptRecords(f"invalid header value length {vsize}", "Record",
                                     "headerValue", pos)
            headers.append(Header(hkey, bytes(buf[pos:pos + vsize])))
            pos += vsize
        if pos != rec_end:
            raise CorruptRecords(f"record length {length} but its fields use {pos - start} "
                                 "bytes", "Record", "length", start)
        rec = Record(base_offset + off_delta,
                     batch.max_timestamp if log_append else base_ts + ts_delta,
                     off_delta, ts_delta, attributes, fields[0], fields[1], headers)
        if control:
            rec.control = _parse_control(rec, start)
        records.append(rec)
    if pos != end:
        raise CorruptRecords(f"{end - pos} bytes left after the {count} declared records",
                             "RecordBatch", "recordsCount", pos)
    return records


# --- batches ------------------------------------------------------------------------

def _decode_one(data, pos: int, verify_crc: bool, max_size: int) -> RecordBatch:
    """Decode the v2 batch at ``pos``; the caller checked its size and magic."""
    batch = RecordBatch(*_HEAD.unpack_from(data, pos))
    end = pos + LOG_OVERHEAD + batch.batch_length
    if verify_crc:
        actual = _crc32c(data[pos + _CRC_START:end])
        if actual != batch.crc:
            raise CrcMismatch(f"crc32c mismatch: batch says {batch.crc:#010x}, content has "
                              f"{actual:#010x}", "RecordBatch", "crc", pos + 17,
                              expected=batch.crc, actual=actual)
    codec = batch.attributes & 0x07
    body_start = pos + HEADER_SIZE
    if codec == Compression.NONE:
        batch.records = _parse_records(data, body_start, end, batch)
        return batch
    if codec > Compression.ZSTD:
        raise UnsupportedCompression(f"unknown compression codec {codec}", "RecordBatch",
                                     "attributes", pos + _CRC_START)
    body = data[body_start:end]
    raw = decompress(codec, body, max_size) if len(body) else b""
    batch.records = _parse_records(raw, 0, len(raw), batch)
    return batch


def iter_batches(data, *, verify_crc: bool = True, strict: bool = False,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
                 ) -> Iterator[RecordBatch]:
    """Yield the batches of a records blob (Produce request or Fetch response ``records``).

    A blob ending inside a batch is normal in Fetch responses (the broker cuts at the
    size limit): such a tail is skipped, or raises :class:`TruncatedRecords` when
    ``strict``.  ``None`` (null records) yields nothing.
    """
    if data is None:
        return
    if not isinstance(data, (bytes, memoryview)):
        data = bytes(data)
    n = len(data)
    pos = 0
    while pos < n:
        if n - pos < LOG_OVERHEAD:
            if strict:
                raise TruncatedRecords(f"{n - pos} trailing bytes, shorter than a batch header",
                                       "RecordBatch", "baseOffset", pos)
            return
        batch_length = _BE_I32.unpack_from(data, pos + 8)[0]
        if batch_length < HEADER_SIZE - LOG_OVERHEAD:
            if batch_length >= 14 and n - pos > _MAGIC_OFFSET and data[pos + _MAGIC_OFFSET] < 2:
                raise _legacy(data[pos + _MAGIC_OFFSET], pos)
            raise CorruptRecords(f"batch length {batch_length} is below the minimum "
                                 f"{HEADER_SIZE - LOG_OVERHEAD}", "RecordBatch", "batchLength",
                                 pos + 8)
        total = LOG_OVERHEAD + batch_length
        if n - pos > _MAGIC_OFFSET and data[pos + _MAGIC_OFFSET] != 2:
            raise _legacy(data[pos + _MAGIC_OFFSET], pos)
        if pos + total > n:
            if strict:
                raise TruncatedRecords(f"batch of {total} bytes but only {n - pos} remain",
                                       "RecordBatch", "batchLength", pos + 8)
            return
        yield _decode_one(data, pos, verify_crc, max_decompressed_size)
        pos += total


def _legacy(magic: int, pos: int) -> UnsupportedRecordFormat:
    if magic in (0, 1):
        msg = f"legacy message set (magic {magic}) is not supported; only record batches v2"
    else:
        msg = f"unknown record format magic {magic}"
    return UnsupportedRecordFormat(msg, "RecordBatch", "magic", pos + _MAGIC_OFFSET)


def decode_batches(data, **kwargs) -> list[RecordBatch]:
    """All batches of a records blob (see :func:`iter_batches` for the options)."""
    return list(iter_batches(data, **kwargs))


def decode_batch(data, *, verify_crc: bool = True,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> RecordBatch:
    """Exactly one batch filling ``data``."""
    batches = decode_batches(data, verify_crc=verify_crc, strict=True,
                             max_decompressed_size=max_decompressed_size)
    if len(batches) != 1:
        raise CorruptRecords(f"expected exactly one batch, found {len(batches)}", "RecordBatch")
    return batches[0]
