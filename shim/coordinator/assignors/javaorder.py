"""The orders Kafka's Java assignors see, computed in Python.

- `uuid_key`: `org.apache.kafka.common.Uuid.compareTo` compares the two 64-bit halves as *signed*
  longs; Python's `uuid.UUID` compares unsigned. Flipping both sign bits makes them agree.
- `string_keys`: `String.compareTo` compares UTF-16 code units; Python compares code
  points. They differ only when a supplementary character (encoded as a surrogate pair) meets a BMP
  character at or above U+E000, so only strings with such characters are compared as UTF-16.
- `java_string_hash`, `java_hashmap_order`, `java_hash_set_order`: String.hashCode and the
  iteration order of a HashMap / `new HashSet<>(list)` of strings (group protocol votes, a consumer
  member's subscribed topic names).
- `hash_set_order`: the iteration order of `new HashSet<>(ids)` (JDK 17-20 sizing) when `ids` are
  inserted in `uuid_key` order: by bucket (`Uuid.hashCode`, HashMap's spread, table size), then by
  insertion order within a bucket. JDK 21+ sizes `new HashSet<>(c)` differently when |c| is 12·2^k.
"""

from __future__ import annotations

import functools
import struct
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


@functools.lru_cache(maxsize=1 << 16)
def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as an unsigned 32-bit value. Cached: it is
    asked for every state record of a group (its partition)."""
    h = 0
    b = s.encode("utf-16-be")
    for unit in struct.unpack(f">{len(b) // 2}H", b):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def java_hashmap_order(keys: list[str]) -> list[str]:
    """Iteration order of a java.util.HashMap holding `keys` inserted in this order (no removals)."""
    cap = 16
    while len(keys) > cap * 0.75:
        cap *= 2
    def bucket(k: str) -> int:
        h = java_string_hash(k)
        return (h ^ (h >> 16)) & (cap - 1)
    indexed = sorted(enumerate(keys), key=lambda ik: (bucket(ik[1]), ik[0]))
    return [k for _, k in indexed]


def java_hash_set_order(strings: Iterable[str]) -> list[str]:
    """Iteration order of `new HashSet<>(list)` of strings (JDK 17 sizing: a table for
    max(n / 0.75 + 1, 16) entries): by bucket of String.hashCode spread, then insertion order;
    duplicates dropped. ConsumerGroupMember keeps its subscribed topic names in such a set."""
    unique = list(dict.fromkeys(strings))
    size = _table_size(max(int(len(unique) / 0.75) + 1, 16))

    def bucket(k: str) -> int:
        h = java_string_hash(k)
        return (h ^ (h >> 16)) & (size - 1)
    return [k for _, k in sorted(enumerate(unique), key=lambda ik: (bucket(ik[1]), ik[0]))]


def java_int_set_order(values: Iterable[int]) -> list[int]:
    """Iteration order of `new HashSet<>(c)` of non-negative Integers (Integer.hashCode is the value):
    by bucket, then insertion (ascending) order. Below the table size this is ascending order."""
    ordered = sorted(set(values))
    size = _table_size(max(int(len(ordered) / 0.75) + 1, 16))
    return sorted(ordered, key=lambda v: (v ^ (v >> 16)) & (size - 1))
