"""The orders Kafka's Java assignors see, computed in Python.

- `uuid_key`: `org.apache.kafka.common.Uuid.compareTo` compares the two 64-bit halves as *signed*
  longs; Python's `uuid.UUID` compares unsigned. Flipping both sign bits makes them agree.
- `string_keys`: `String.compareTo` compares UTF-16 code units; Python compares code
  points. They differ only when a supplementary character (encoded as a surrogate pair) meets a BMP
  character at or above U+E000, so only strings with such characters are compared as UTF-16.
- `hash_set_order`: the iteration order of `new HashSet<>(ids)` (JDK 17-20 sizing) when `ids` are
  inserted in `uuid_key` order: by bucket (`Uuid.hashCode`, HashMap's spread, table size), then by
  insertion order within a bucket. JDK 21+ sizes `new HashSet<>(c)` differently when |c| is 12·2^k.
"""

from __future__ import annotations

import uuid
from typing import Iterable

_SIGN_BITS = (1 << 127) | (1 << 63)
_MASK32 = 0xFFFFFFFF


def uuid_key(u: uuid.UUID) -> int:
    return u.int ^ _SIGN_BITS


def uuid_hash(u: uuid.UUID) -> int:
    """Kafka `Uuid.hashCode()` as an unsigned 32-bit value."""
    x = (u.int >> 64) ^ (u.int & 0xFFFFFFFFFFFFFFFF)
    return ((x >> 32) ^ x) & _MASK32


def _table_size(cap: int) -> int:
    n = 1
    while n < cap:
        n <<= 1
    return n


def hash_set_order(ids: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    ordered = sorted(ids, key=uuid_key)
    size = _table_size(max(int(len(ordered) / 0.75) + 1, 16))
    mask = size - 1

    def bucket(u: uuid.UUID) -> int:
        h = uuid_hash(u)
        return (h ^ (h >> 16)) & mask
    return sorted(ordered, key=bucket)  # stable: insertion (uuid_key) order within a bucket


def _needs_utf16(s: str) -> bool:
    return not s.isascii() and any(ord(c) > 0xFFFF for c in s)


def string_keys(strings: Iterable[str]):
    """A key function ordering these strings like Java's String.compareTo."""
    if any(_needs_utf16(s) for s in strings):
        return lambda s: s.encode("utf-16-be", "surrogatepass")
    return lambda s: s
