"""Decompression of a record batch's records section: gzip (stdlib), snappy (Kafka's xerial
block framing, or raw snappy), lz4 (frame format) and zstd, the last three through ``cramjam``;
each bounded by a size limit."""

from __future__ import annotations

import struct
import zlib

import cramjam

from .record_types import Compression, DecompressionFailed, RecordsError, UnsupportedCompression

DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_BE_I32 = struct.Struct(">i")


def _too_big(size: int, limit: int, codec: str) -> DecompressionFailed:
    return DecompressionFailed(f"{codec} records decompress to {size} bytes, over the limit "
                               f"of {limit}", "RecordBatch", "records")


def _gunzip(data, limit: int) -> bytes:
    out = bytearray()
    rest = bytes(data)
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += d.decompress(rest, limit + 1 - len(out))
        if len(out) > limit:
            raise _too_big(len(out), limit, "gzip")
        if not d.eof:
            if d.unconsumed_tail:
                raise _too_big(len(out) + 1, limit, "gzip")
            raise DecompressionFailed("truncated gzip stream", "RecordBatch", "records")
        rest = d.unused_data
        if not rest:
            return bytes(out)


def _snappy_raw(block, limit: int, total: int) -> bytes:
    declared = cramjam.snappy.decompress_raw_len(bytes(block))
    if total + declared > limit:
        raise _too_big(total + declared, limit, "snappy")
    return bytes(cramjam.snappy.decompress_raw(block))


def _unsnappy(data, limit: int) -> bytes:
    if bytes(data[:8]) != _XERIAL_MAGIC:
        return _snappy_raw(data, limit, 0)
    # xerial framing: 16-byte header (magic, int32 version, int32 compat), then
    # blocks of int32 compressed length + raw snappy data.
    if len(data) < 16:
        raise DecompressionFailed("truncated xerial snappy header", "RecordBatch", "records")
    out = bytearray()
    pos, n = 16, len(data)
    while pos < n:
        if n - pos < 4:
            raise DecompressionFailed("truncated xerial snappy block length", "RecordBatch",
                                      "records", pos)
        size = _BE_I32.unpack_from(data, pos)[0]
        pos += 4
        if size < 0 or pos + size > n:
            raise DecompressionFailed(f"invalid xerial snappy block length {size}",
                                      "RecordBatch", "records", pos - 4)
        out += _snappy_raw(data[pos:pos + size], limit, len(out))
        pos += size
    return bytes(out)


def _cramjam(module, name: str):
    def run(data, limit: int) -> bytes:
        out = bytes(module.decompress(bytes(data)))
        if len(out) > limit:
            raise _too_big(len(out), limit, name)
        return out
    return run


_DECOMPRESSORS = {
    Compression.GZIP: _gunzip,
    Compression.SNAPPY: _unsnappy,
    Compression.LZ4: _cramjam(cramjam.lz4, "lz4"),
    Compression.ZSTD: _cramjam(cramjam.zstd, "zstd"),
}


def decompress(codec: int, data, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress the records section of a batch compressed with ``codec`` (0-4)."""
    if codec == Compression.NONE:
        return bytes(data)
    fn = _DECOMPRESSORS.get(codec)
    if fn is None:
        raise UnsupportedCompression(f"unknown compression codec {codec}", "RecordBatch",
                                     "attributes")
    try:
        return fn(data, max_size)
    except RecordsError:
        raise
    except (zlib.error, cramjam.DecompressionError, ValueError, OSError) as e:
        name = Compression(codec).name.lower()
        raise DecompressionFailed(f"{name}: {e}", "RecordBatch", "records") from None
