"""Which server assignor a consumer group uses: the name most members prefer, ties decided by the
iteration order of the broker's Java maps (Kafka's `ConsumerGroup.computePreferredServerAssignor` and
`ConsumerGroup.preferredServerAssignor`; both keep the first entry of highest count).

- ConsumerGroupDescribe reads the group's counts as they are: a `TimelineHashMap` (Kafka's
  `BaseHashTable`: Fibonacci hashing of `String.hashCode`, the top bits of the product pick the
  slot; a slot's entries are iterated newest first).
- The target assignment (`GroupMetadataManager.maybeUpdateTargetAssignment`) copies the counts from
  before the heartbeat into a `java.util.HashMap`, then takes the triggering member's old name away
  and adds its new name with `Map.compute`. `HashMap.compute` puts a new key at the *head* of its
  bucket, so when the trigger's name was removed and re-added (its count was 1) it comes first in
  its bucket: on a tie, the member whose heartbeat computes the assignment decides ("uniform" and
  "range" share a bucket in small tables).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from ..assignors.javaorder import java_string_hash as _unsigned_hash

_GOLDEN = -7046029254386353131          # BaseHashTable.findSlot's multiplier
_M64 = (1 << 64) - 1


def java_string_hash(s: str) -> int:
    """`String.hashCode()` as a signed 32-bit int."""
    h = _unsigned_hash(s)
    return h - (1 << 32) if h & 0x80000000 else h


def _timeline_capacity(size: int) -> int:
    """BaseHashTable's table length after `size` insertions from an empty map (starts at 2, doubles
    when (size + 1) * 0.75 exceeds it)."""
    cap = 2
    for n in range(size):
        if (n + 1) * 0.75 > cap:
            cap *= 2
    return cap


def timeline_order(names: Iterable[str]) -> list[str]:
    """The iteration order of a TimelineHashMap holding `names` (given in insertion order): by slot,
    the newest first within a slot (`SnapshottableHashTable.CurrentIterator` takes a slot's entries
    from its end)."""
    names = list(names)
    cap = _timeline_capacity(len(names))
    shift = 65 - cap.bit_length()
    return [n for _, _, n in sorted((((java_string_hash(n) * _GOLDEN) & _M64) >> shift, -i, n)
                                    for i, n in enumerate(names))]


def _first_max(items: list[tuple[str, int]]) -> str | None:
    best = None
    for name, count in items:
        if best is None or count > best[1]:
            best = (name, count)
    return None if best is None else best[0]


def described(counts: Counter, default: str) -> str:
    """The assignor name ConsumerGroupDescribe reports (`ConsumerGroup.preferredServerAssignor`)."""
    name = _first_max([(n, counts[n]) for n in timeline_order(counts)])
    return default if name is None else name


class _JavaHashMap:
    """Enough of `java.util.HashMap` (JDK 17) for its iteration order: buckets by the spread hash,
    `putVal` appends to a bucket, `compute` prepends a new key, resizes keep the relative order."""

    def __init__(self, source: list[tuple[str, int]]):
        self.values: dict[str, int] = {}
        self.cap = 0                               # no table yet
        self.threshold = 0
        if source:                                 # HashMap(Map): sized for the copy
            t = int(len(source) / 0.75 + 1.0)
            self.threshold = 1 << max(t - 1, 0).bit_length()
        self.buckets: list[list[str]] = []
        for name, count in source:
            if not self.buckets:
                self._resize()
            self.values[name] = count
            self.buckets[self._index(name)].append(name)
            if len(self.values) > self.threshold:
                self._resize()

    def _index(self, name: str) -> int:
        h = java_string_hash(name) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (self.cap - 1)

    def _resize(self) -> None:
        if self.cap == 0:
            self.cap = self.threshold or 16
        else:
            self.cap *= 2
        self.threshold = int(self.cap * 0.75)
        old = [n for b in self.buckets for n in b]
        self.buckets = [[] for _ in range(self.cap)]
        for n in old:
            self.buckets[self._index(n)].append(n)

    def compute(self, name: str, delta: int) -> None:
        if len(self.values) > self.threshold or self.cap == 0:
            self._resize()
        have = self.values.get(name)
        if have is not None:
            if have + delta > 0:
                self.values[name] = have + delta
            else:                                   # Utils.decValue: null removes the key
                del self.values[name]
                self.buckets[self._index(name)].remove(name)
        elif delta > 0:
            self.values[name] = delta
            self.buckets[self._index(name)].insert(0, name)

    def items(self) -> list[tuple[str, int]]:
        return [(n, self.values[n]) for b in self.buckets for n in b]


def _before(counts: Counter, old: str | None, new: str | None) -> Counter:
    """The counts before the member whose assignor went from `old` to `new` changed (`counts` holds `new`)."""
    before = Counter(counts)
    if new:
        before[new] -= 1
        if before[new] <= 0:
            del before[new]
    if old:
        before[old] += 1
    return before


def preferred_changed(counts: Counter, old: str | None, new: str | None, default: str) -> bool:
    """GroupMetadataManager.hasPreferredServerAssignorChanged (Kafka 4.4, KAFKA-20434): the group's
    preferred assignor before the member's change (`ConsumerGroup.preferredServerAssignor`, read as
    ConsumerGroupDescribe reads it) against the one with it (`computePreferredServerAssignor`, as the
    target assignment computes it)."""
    return described(_before(counts, old, new), default) != for_target(counts, old, new, default)


def for_target(counts: Counter, old: str | None, new: str | None, default: str) -> str:
    """The assignor the target assignment uses when the member whose assignor went from `old` to
    `new` (None: none, or a new member) triggers it; `counts` already holds `new`."""
    before = _before(counts, old, new)
    m = _JavaHashMap([(n, before[n]) for n in timeline_order(before)])
    if old:
        m.compute(old, -1)
    if new:
        m.compute(new, 1)
    name = _first_max(m.items())
    return default if name is None else name
