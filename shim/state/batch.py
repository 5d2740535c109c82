"""A RecordBatch v2 ("magic 2") encoder for kshim's own appends: uncompressed, optional headers,
non-transactional, no idempotence (producer id -1). The layout (kcodec.records decodes it):

    baseOffset int64 (0, the broker assigns) | batchLength int32 (bytes after this field) |
    partitionLeaderEpoch int32 (-1) | magic int8 (2) | crc uint32 |
    attributes int16 (0) | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 |
    producerId int64 (-1) | producerEpoch int16 (-1) | baseSequence int32 (-1) | recordsCount int32 |
    records

The crc is CRC-32C over attributes .. end of the batch. Each record is
``length varint | attributes int8 (0) | timestampDelta varlong | offsetDelta varint |
key varint length + bytes (-1 = null) | value (same) | headers count varint | headers``, varints
zigzag; a header is ``key varint length + UTF-8 | value varint length + bytes``.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

_AFTER_CRC = struct.Struct(">hiqqqhii")     # attributes .. recordsCount
_BEFORE_CRC = struct.Struct(">qiib")        # baseOffset, batchLength, partitionLeaderEpoch, magic
_CRC = struct.Struct(">I")


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    z &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


_SMALL = 16384                                    # record indexes and lengths are almost always below
_ZZ = tuple(_zigzag(n) for n in range(_SMALL))    # zigzag varints of 0.._SMALL-1
_NULL = _zigzag(-1)


def zigzag_varint(n: int) -> bytes:
    return _ZZ[n] if 0 <= n < _SMALL else _zigzag(n)


def _blob(b: bytes | None) -> bytes:
    if b is None:
        return _NULL
    return zigzag_varint(len(b)) + bytes(b)


def _headers(headers) -> bytes:
    out = zigzag_varint(len(headers))
    for k, v in headers:
        out += _blob(k.encode()) + _blob(v)
    return out


def encode_batch(records: list, timestamp_ms: int) -> bytes:
    """One batch holding `records` [(key, value)] or [(key, value, headers)] (headers: [(str, bytes)]),
    all stamped `timestamp_ms` (CreateTime)."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    parts = []
    zz = _ZZ
    for i, r in enumerate(records):
        # attributes 0, timestampDelta 0, offsetDelta i, key, value, headers; zigzag_varint and _blob
        # inline (every state append runs this per record): indexes and lengths are never negative
        key, value = r[0], r[1]
        if key is None:
            key = _NULL
        else:
            n = len(key)
            key = (zz[n] if n < _SMALL else _zigzag(n)) + key
        if value is None:
            value = _NULL
        else:
            n = len(value)
            value = (zz[n] if n < _SMALL else _zigzag(n)) + value
        rec = (b"\x00\x00" + (zz[i] if i < _SMALL else _zigzag(i)) + key + value
               + (_headers(r[2]) if len(r) > 2 and r[2] else b"\x00"))
        n = len(rec)
        parts.append(zz[n] if n < _SMALL else _zigzag(n))
        parts.append(rec)
    tail = _AFTER_CRC.pack(0, len(records) - 1, timestamp_ms, timestamp_ms, -1, -1, -1, len(records)) + b"".join(parts)
    crc = crc32c(tail)
    batch_length = 4 + 1 + 4 + len(tail)    # partitionLeaderEpoch + magic + crc + rest
    return _BEFORE_CRC.pack(0, batch_length, -1, 2) + _CRC.pack(crc) + tail
