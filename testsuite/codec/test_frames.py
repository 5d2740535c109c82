"""Unit tests of kcodec.frames: the sans-IO frame splitter and the header peeks."""

import random
import struct

import pytest

from kcodec.errors import DecodeError
from kcodec import api
from kcodec.frames import (FrameSplitter, FrameTooLarge, InvalidFrameLength, length_prefix,
                           peek_request, peek_response_correlation_id, produce_acks, request_body_offset,
                           response_header)


def framed(*payloads):
    return b"".join(length_prefix(len(p)) + p for p in payloads)


def request_header(api_key, version, corr, client_id, flexible=False, tags=b"\x00"):
    if client_id is None:
        cid = struct.pack(">h", -1)
    else:
        raw = client_id.encode()
        cid = struct.pack(">h", len(raw)) + raw
    return struct.pack(">hhi", api_key, version, corr) + cid + (tags if flexible else b"")


def test_whole_frames_are_zero_copy_views():
    payloads = [b"a" * 10, b"", b"xyz" * 100]
    data = framed(*payloads)
    frames = FrameSplitter().feed(data)
    assert [bytes(f) for f in frames] == payloads
    assert all(isinstance(f, memoryview) and f.obj is data for f in frames)


@pytest.mark.parametrize("seed", range(20))
def test_arbitrary_chunking(seed):
    rnd = random.Random(seed)
    payloads = [rnd.randbytes(rnd.choice([0, 1, 3, 4, 5, 100, 5000])) for _ in range(30)]
    data = framed(*payloads)
    sp = FrameSplitter(max_frame_size=5000)
    got, pos = [], 0
    while pos < len(data):
        step = rnd.choice([1, 2, 3, 4, 5, 7, 64, 4096, 20000])
        chunk = data[pos:pos + step]
        got += [bytes(f) for f in sp.feed(bytearray(chunk) if seed % 2 else chunk)]
        pos += step
        assert sp.buffered < 5004 + 4
    assert got == payloads
    assert sp.at_boundary and sp.buffered == 0


def test_partial_state():
    sp = FrameSplitter()
    assert sp.feed(b"\x00\x00") == []
    assert sp.buffered == 2 and not sp.at_boundary
    assert sp.feed(b"\x00\x03ab") == []
    assert sp.buffered == 6
    (f,) = sp.feed(b"c\x00")
    assert bytes(f) == b"abc" and sp.buffered == 1


def test_feed_copies_mutable_input():
    sp = FrameSplitter()
    buf = bytearray(framed(b"hello"))
    (f,) = sp.feed(buf)
    buf[4:9] = b"XXXXX"
    assert bytes(f) == b"hello"


@pytest.mark.parametrize("prefix_split", [0, 1, 3])
def test_too_large_rejected_before_body(prefix_split):
    sp = FrameSplitter(max_frame_size=100)
    data = length_prefix(101) + b"x" * 10
    if prefix_split:
        sp.feed(data[:prefix_split])
        data = data[prefix_split:]
    with pytest.raises(FrameTooLarge) as ei:
        sp.feed(data)
    assert isinstance(ei.value, DecodeError) and ei.value.field == "length"
    assert sp.buffered == 0
    with pytest.raises(FrameTooLarge):  # poisoned
        sp.feed(b"")


def test_max_size_is_inclusive_and_negative_rejected():
    sp = FrameSplitter(max_frame_size=3)
    assert [bytes(f) for f in sp.feed(framed(b"abc"))] == [b"abc"]
    with pytest.raises(InvalidFrameLength):
        sp.feed(struct.pack(">i", -1))


def test_error_after_good_frames_in_same_chunk():
    sp = FrameSplitter(max_frame_size=10)
    with pytest.raises(FrameTooLarge) as ei:
        sp.feed(framed(b"ok") + length_prefix(11))
    assert ei.value.offset == 6


def test_peek_request_and_response():
    f = request_header(3, 12, 77, "my-client", flexible=True) + b"body"
    assert peek_request(f) == (3, 12, 77, "my-client")
    assert peek_request(memoryview(request_header(18, 4, -5, None))) == (18, 4, -5, None)
    assert peek_request(request_header(1, 4, 1, "")) == (1, 4, 1, "")
    assert peek_request(struct.pack(">hhih", 0, 3, 1, 2) + b"\xff\xfe")[3] == "\ufffd\ufffd"
    assert peek_response_correlation_id(struct.pack(">i", 123456) + b"\x00") == 123456
    for bad in (b"", b"\x00" * 9, struct.pack(">hhih", 0, 3, 1, 5) + b"abc"):
        with pytest.raises(DecodeError):
            peek_request(bad)
    with pytest.raises(DecodeError):
        peek_response_correlation_id(b"\x00\x00\x01")


def uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def produce_frame(version, acks, txn_id, client_id="c", tags=b"\x00"):
    flexible = version >= 9
    head = request_header(0, version, 9, client_id, flexible, tags)
    if flexible:
        body = b"\x00" if txn_id is None else uvarint(len(txn_id) + 1) + txn_id.encode()
    else:
        body = struct.pack(">h", -1) if txn_id is None else \
            struct.pack(">h", len(txn_id)) + txn_id.encode()
    return head + body + struct.pack(">hi", acks, 30000) + b"\x00\x00\x00\x00"


@pytest.mark.parametrize("version", range(3, 14))
@pytest.mark.parametrize("acks", [-1, 0, 1])
@pytest.mark.parametrize("txn", [None, "", "txn-1", "t" * 200])
def test_produce_acks(version, acks, txn):
    f = produce_frame(version, acks, txn)
    assert produce_acks(f) == acks
    assert produce_acks(memoryview(f), version) == acks


def test_produce_acks_skips_header_tagged_fields_and_long_varints():
    tags = b"\x02" + b"\x00\x03abc" + b"\x81\x01\x01z"  # two tagged fields, 2-byte tag
    assert produce_acks(produce_frame(11, -1, "tx", tags=tags)) == -1
    # a compact string whose length takes two varint bytes
    txn = "x" * 300
    head = request_header(0, 10, 1, None, True)
    f = head + uvarint(301) + txn.encode() + struct.pack(">h", 1)
    assert produce_acks(f) == 1


def test_produce_acks_errors():
    with pytest.raises(DecodeError):
        produce_acks(request_header(3, 12, 1, "c", True) + b"\x00")  # not Produce
    good = produce_frame(9, 1, "abc")
    for cut in range(len(good) - 10):
        with pytest.raises(DecodeError):
            produce_acks(good[:cut])
    with pytest.raises(DecodeError):
        produce_acks(request_header(0, 9, 1, "c", True, tags=b"\xff\xff\xff\xff\xff\x01"))


@pytest.mark.parametrize("client_id", [None, "", "producer-1", "é" * 70])
@pytest.mark.parametrize("flexible,tags", [(False, b""), (True, b"\x00"), (True, b"\x01\x05\x02ab"),
                                           (True, b"\x02\x00\x00\x81\x01\x81\x01" + b"x" * 129)])
def test_request_body_offset_is_where_the_header_decoder_stops(client_id, flexible, tags):
    frame = request_header(8, 8 if flexible else 7, 42, client_id, flexible, tags) + b"BODY"
    _, pos = api.RequestHeader.decode_from(frame, 0, 2 if flexible else 1)
    assert request_body_offset(frame, flexible) == pos
    assert frame[pos:] == b"BODY"


@pytest.mark.parametrize("flexible,cut", [(False, 5), (False, 12), (True, 13), (True, 16), (True, 18), (True, 20)])
def test_request_body_offset_of_a_truncated_header_is_a_decode_error(flexible, cut):
    frame = request_header(8, 8, 42, "client", flexible, b"\x01\x05\x02ab")[:cut]
    with pytest.raises(DecodeError):
        request_body_offset(frame, flexible)


@pytest.mark.parametrize("version", [0, 1])
def test_response_header_bytes_are_the_generated_encoding(version):
    """frames.response_header (the local answers' hot path) writes what the generated ResponseHeader
    writes, for both header versions and correlation ids across the int32 range."""
    rng = random.Random(version)
    for corr in [0, 1, -1, 2**31 - 1, -2**31] + [rng.randint(-2**31, 2**31 - 1) for _ in range(200)]:
        assert response_header(corr, version) == api.ResponseHeader(correlation_id=corr).encode(version)
