"""Fuzz targets shared by testsuite/codec/test_fuzz.py (hypothesis) and scripts/fuzz-codec
(atheris). Each target takes raw bytes and may only let ``DecodeError`` escape."""

from __future__ import annotations

import random
import struct

from kcodec import frames, records
from kcodec.errors import DecodeError


def frame_splitter(data: bytes) -> None:
    """First byte picks chunk sizes; the rest is the stream."""
    step = (data[0] % 17) + 1 if data else 1
    sp = frames.FrameSplitter(max_frame_size=4096)
    payload = data[1:]
    got = []
    try:
        for i in range(0, len(payload), step):
            got += sp.feed(payload[i:i + step])
    except DecodeError:
        pass
    for f in got:
        try:
            frames.peek_request(f)
        except DecodeError:
            pass
        try:
            frames.produce_acks(f)
        except DecodeError:
            pass


def peeks(data: bytes) -> None:
    for fn in (frames.peek_request, frames.peek_response_correlation_id, frames.produce_acks):
        try:
            fn(data)
        except DecodeError:
            pass
    for version in (3, 9):
        try:
            frames.produce_acks(b"\x00\x00" + data[2:], version)
        except DecodeError:
            pass
    for flexible in (False, True):
        try:
            frames.request_body_offset(data, flexible)
        except DecodeError:
            pass


def records_blob(data: bytes) -> None:
    for verify in (True, False):
        try:
            for batch in records.iter_batches(data, verify_crc=verify,
                                              max_decompressed_size=1 << 20):
                batch.to_dict()
        except DecodeError:
            pass


def seed_batches() -> list[bytes]:
    """Small valid batches (every codec, plus a control batch) built without kcodec."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.util import calc_crc32c
    out = []
    for codec in range(5):
        b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                      producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                      batch_size=1 << 20)
        for i in range(3):
            b.append(i, timestamp=1000 + i, key=b"k%d" % i, value=b"value " * 20,
                     headers=[("h", b"v")] if i else [])
        out.append(bytes(b.build()))
    b = DefaultRecordBatchBuilder(2, 0, True, 7, 0, -1, 1 << 20)
    b.append(0, timestamp=5, key=struct.pack(">hh", 0, 1), value=struct.pack(">hi", 0, 3),
             headers=[])
    ctl = bytearray(b.build())
    struct.pack_into(">h", ctl, 21, struct.unpack_from(">h", ctl, 21)[0] | 0x20)
    struct.pack_into(">I", ctl, 17, calc_crc32c(bytes(ctl[21:])))
    out.append(bytes(ctl))
    return out


def fix_crc(batch: bytes) -> bytes:
    """Recompute the crc of a (possibly mutated) batch so decoding goes past the crc check."""
    if len(batch) < 61:
        return batch
    b = bytearray(batch)
    struct.pack_into(">I", b, 17, records.crc32c(bytes(b[21:])))
    return bytes(b)


def mutate(seed: bytes, data: bytes) -> bytes:
    """Deterministic mutation of ``seed`` driven by ``data``."""
    rnd = random.Random(data)
    b = bytearray(seed)
    for _ in range(1 + (data[0] % 4 if data else 0)):
        op = rnd.randrange(4)
        pos = rnd.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(pos, len(b) - 1)] ^= 1 << rnd.randrange(8)
        elif op == 1:
            b[pos:pos] = data[:rnd.randrange(1, 9)]
        elif op == 2:
            del b[pos:pos + rnd.randrange(1, 9)]
        else:
            del b[pos:]
    return bytes(b)


def api_targets():
    """(api_key, version, kind) for every request/response version kcodec knows."""
    from kcodec import api
    out = []
    for key, (lo, hi) in sorted(api.VERSIONS.items()):
        for v in range(lo, hi + 1):
            out.append((key, v, "request"))
            out.append((key, v, "response"))
    return out


def decode_api(key: int, version: int, kind: str, data: bytes) -> None:
    """Decode; whatever decodes must encode again (the same bytes, or an EncodeError for a
    value only the wire can hold) and survive to_json."""
    from kcodec import api
    from kcodec.errors import EncodeError
    fn = api.decode_request if kind == "request" else api.decode_response
    try:
        obj = fn(key, version, data)
    except DecodeError:
        return
    obj.to_json(version)
    try:
        obj.encode(version)
    except EncodeError:
        pass
