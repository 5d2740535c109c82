"""The limits of Kafka 4.4's generated readers (kafka-clients 4.4.0: MessageDataGenerator's output
refuses an array count above 1,000,000 and a tagged-field count above 10,000 or above the bytes
left), kept by kcodec's decoders: such a request is one the broker cannot parse."""

from __future__ import annotations

import struct

import pytest

from kcodec import api
from kcodec._rt import MAX_ARRAY_LENGTH, MAX_TAGGED_FIELDS, uv_enc
from kcodec.errors import DecodeError

DELETE_GROUPS = 42


def _delete_groups_v0(count: int, names: list[bytes], tail: bytes = b"") -> bytes:
    return struct.pack(">i", count) + b"".join(struct.pack(">h", len(n)) + n for n in names) + tail


def test_array_count_above_the_limit_is_refused_even_when_the_bytes_are_there():
    n = MAX_ARRAY_LENGTH + 1
    body = _delete_groups_v0(n, [b""] * n)            # 2 bytes an element: the bytes are all there
    with pytest.raises(DecodeError, match="longer than 1000000"):
        api.REQUESTS[DELETE_GROUPS].decode(body, 0)
    ok = _delete_groups_v0(MAX_ARRAY_LENGTH, [b""] * MAX_ARRAY_LENGTH)
    assert len(api.REQUESTS[DELETE_GROUPS].decode(ok, 0).groups_names) == MAX_ARRAY_LENGTH


def test_tagged_field_count_above_the_limit_is_refused():
    # DeleteGroups v2 (flexible): compact array of one name, then the tagged-field section
    head = uv_enc(2) + uv_enc(2) + b"g"
    fields = b"".join(uv_enc(t) + uv_enc(0) for t in range(MAX_TAGGED_FIELDS + 1))
    with pytest.raises(DecodeError, match="tagged fields"):
        api.REQUESTS[DELETE_GROUPS].decode(head + uv_enc(MAX_TAGGED_FIELDS + 1) + fields, 2)
    ok = head + uv_enc(MAX_TAGGED_FIELDS) + b"".join(uv_enc(t) + uv_enc(0) for t in range(MAX_TAGGED_FIELDS))
    assert len(api.REQUESTS[DELETE_GROUPS].decode(ok, 2)._unknown_tagged_fields) == MAX_TAGGED_FIELDS
    with pytest.raises(DecodeError, match="tagged fields"):              # more than the bytes left
        api.REQUESTS[DELETE_GROUPS].decode(head + uv_enc(5) + b"\x00\x00", 2)
