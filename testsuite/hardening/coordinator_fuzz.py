"""Fuzz target for the coordinator's request handling, shared by test_coordinator_fuzz.py
(Hypothesis, short, in CI) and scripts/fuzz-coordinator (atheris, coverage-guided, long).

One input is a little program for a fresh sans-IO `GroupCoordinator`: each step either moves the
clock forward (by up to ~18 hours, at several scales), or sends a request of any group API and
version the coordinator answers - decoded from raw bytes (as a hostile client could send them), or
a schema-valid random request whose group ids, member ids, generations, instance ids, topics and
protocols are drawn from small pools and from what earlier answers handed out (so the input can
reach joins, syncs, heartbeats and commits of live members). The request goes through an encode and
decode round trip at its version, as it would on the wire.

Invariants (a violation raises `Finding`; any other exception escaping is a finding too):
- every answer is for a request that was sent and not yet answered, and encodes at its version;
- the coordinator never holds more groups than group ids it has been sent, nor more members than
  joins it has seen (memory stays bounded by input);
- after the clock moves far ahead (12 hours past the last step, longer than any timeout an input
  can set) no request is left unanswered, except one superseded by a newer JoinGroup/SyncGroup
  of the same member (as in Kafka);
- after every step and at the end, a fresh coordinator fed every record written so far through
  replay() has the same durable state as the live one (testsuite/coordinator/replay_check.py says
  what is durable and what is left out by design).
"""

from __future__ import annotations

import itertools
import random
import struct

from kcodec import api
from kcodec.errors import DecodeError, EncodeError
from kcodec.generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from shim.coordinator import CoordinatorConfig, GroupCoordinator
from shim.coordinator.dispatch import VERSIONS
from testsuite.coordinator.replay_check import check_replay

GROUPS = ("g0", "g1", "g2")
TOPICS = {"t0": 1, "t1": 3}
INSTANCES = (None, "i0", "i1")
PROTOCOLS = ("range", "roundrobin", "cooperative-sticky")
PTYPES = ("consumer", "consumer", "connect", "")
SESSIONS = (10000, 10000, 45000, 6000, 1, 10**7)
TARGETS = sorted((key, v) for key, (lo, hi) in VERSIONS.items() for v in range(lo, hi + 1))
SCALES = (1, 10, 100, 1000)
MAX_STEPS = 24


class Finding(AssertionError):
    """An invariant of the coordinator does not hold for this input."""


class Reader:
    """Decisions from the input bytes (zeros once they run out)."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def u8(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def u16(self) -> int:
        return self.u8() << 8 | self.u8()

    def take(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out

    def pick(self, seq):
        return seq[self.u8() % len(seq)]


def _subscription(r: Reader) -> bytes:
    if r.u8() % 4 == 0:
        return r.take(r.u8() % 24)          # not a consumer-protocol subscription at all
    topics = [t for t in TOPICS if r.u8() & 1] + (["nope"] if r.u8() % 8 == 0 else [])
    version = r.u8() % 4
    return struct.pack(">h", version) + ConsumerProtocolSubscription(topics=topics).encode(version)


class Program:
    def __init__(self, data: bytes):
        self.r = Reader(data)
        self._uuids = itertools.count(1)
        self.c = GroupCoordinator(CoordinatorConfig(initial_rebalance_delay_ms=self.r.pick((0, 3000, 100))),
                                  now_ms=0, new_uuid=lambda: f"u{next(self._uuids)}", topics=dict(TOPICS),
                                  on_event=lambda ev: None)
        self.now = 0
        self.tokens = itertools.count(1)
        self.parked: dict[int, tuple[int, int]] = {}
        self.members: list[str] = ["", "unknown-member"]
        self.generations: list[int] = [-1, 0, 1]
        self.group_ids: set[str] = set()
        self.joins = 0
        self.schemas = None
        self.latest: dict[tuple, int] = {}      # (api, group, member id) -> newest token
        self.owner: dict[int, tuple] = {}       # parked Join/Sync token -> (api, group, member id)
        self.log: list = []                     # every record written, in order (the state topic)
        self.check_replay = True

    # ------------------------------------------------------------------ requests
    def structured(self, key: int, version: int):
        from testsuite.codec.schema_samples import Generator, load_schemas
        if self.schemas is None:
            self.schemas = _schemas(load_schemas)
        cls = api.REQUESTS[key]
        rnd = random.Random(self.r.u16())
        req = cls.from_json(Generator(self.schemas[key], rnd, max_items=2).message(version), version)
        self._fill(req, 0)
        return req

    def _fill(self, obj, depth: int) -> None:
        r = self.r
        for name in getattr(obj, "__slots__", ()):
            value = getattr(obj, name, None)
            if name == "group_id":
                setattr(obj, name, r.pick(GROUPS))
            elif name == "member_id":   # mostly the newest ids handed out
                setattr(obj, name, self.members[-1 - r.u8() % min(3, len(self.members))] if r.u8() & 1 else r.pick(self.members))
            elif name in ("generation_id", "generation_id_or_member_epoch", "member_epoch"):
                setattr(obj, name, self.generations[-1] if r.u8() & 1 else r.pick(self.generations))
            elif name == "group_instance_id" or name == "instance_id":
                if value is not None or r.u8() & 1:
                    setattr(obj, name, r.pick(INSTANCES))
            elif name in ("groups", "groups_names") and value and isinstance(value[0], str):
                setattr(obj, name, [r.pick(GROUPS) for _ in value])
            elif name in ("session_timeout_ms", "rebalance_timeout_ms"):
                setattr(obj, name, r.pick(SESSIONS + (-1,)))
            elif name == "protocol_type":
                setattr(obj, name, r.pick(PTYPES))
            elif name == "metadata" and isinstance(value, bytes):
                setattr(obj, name, _subscription(r))
            elif name in ("name", "topic") and isinstance(value, str) and depth:
                setattr(obj, name, r.pick(tuple(TOPICS) + ("nope",)))
            elif name in ("partition_index", "partition"):
                setattr(obj, name, r.u8() % 4 - (1 if r.u8() == 255 else 0))
            elif name == "partition_indexes" and value is not None:
                setattr(obj, name, [r.u8() % 4 for _ in value])
            elif name in ("producer_id", "producer_epoch", "committed_offset"):
                setattr(obj, name, r.pick((-1, 0, 1, 7)))
            elif type(value) is list:
                for item in value:
                    if hasattr(item, "__slots__"):
                        self._fill(item, depth + 1)
                if name == "protocols":
                    for item in value:
                        item.name = r.pick(PROTOCOLS)

    def send(self) -> None:
        r = self.r
        key, version = r.pick(TARGETS) if len(TARGETS) < 256 else TARGETS[r.u16() % len(TARGETS)]
        try:
            if r.u8() % 4 == 0:            # raw bytes, as a hostile client could send them
                req = api.REQUESTS[key].decode(r.take(r.u8()), version)
            else:
                req = self.structured(key, version)
                req = api.REQUESTS[key].decode(req.encode(version), version)   # the wire round trip
        except (DecodeError, EncodeError):
            return
        for name in ("group_id",):
            if getattr(req, name, None) is not None:
                self.group_ids.add(getattr(req, name))
        for name in ("groups", "groups_names"):
            for g in getattr(req, name, None) or []:
                self.group_ids.add(g if isinstance(g, str) else getattr(g, "group_id", ""))
        if key in (11, 68):
            self.joins += 1
        token = next(self.tokens)
        self.parked[token] = (key, version)
        if key in (11, 14) and req.member_id:
            self.owner[token] = (key, req.group_id, req.member_id)
            self.latest[(key, req.group_id, req.member_id)] = token
        out = self.c.handle(key, version, req, token, client_id="fuzz", client_host="/127.0.0.1", now_ms=self.now)
        self.collect(out)

    # ------------------------------------------------------------------ answers
    def collect(self, out) -> None:
        self.log.extend(out.records)
        for resp in out.responses:
            if resp.token not in self.parked:
                raise Finding(f"answer for token {resp.token}, which is not waiting (answered twice?)")
            key, version = self.parked.pop(resp.token)
            try:
                resp.body.encode(version)
            except EncodeError as e:
                raise Finding(f"{api.API_KEYS[key]} v{version} answer does not encode: {e}") from e
            member = getattr(resp.body, "member_id", None)
            if member and member not in self.members and len(self.members) < 64:
                self.members.append(member)
            for name in ("generation_id", "member_epoch"):
                gen = getattr(resp.body, name, None)
                if isinstance(gen, int) and gen not in self.generations and len(self.generations) < 64:
                    self.generations.append(gen)
        self.check_bounds()

    def check_bounds(self) -> None:
        groups = self.c.groups
        if len(groups) > len(self.group_ids):
            raise Finding(f"{len(groups)} groups from {len(self.group_ids)} group ids")
        members = sum(len(getattr(g, "members", ())) for g in groups.values())
        if members > self.joins:
            raise Finding(f"{members} members after {self.joins} joins")

    def replay_agrees(self, when: str) -> None:
        if self.check_replay:
            diffs = check_replay(self.c, self.log)
            if diffs:
                raise Finding(f"{when}: replaying the {len(self.log)} records written differs from the live "
                              "state:\n  " + "\n  ".join(diffs))

    def tick(self) -> None:
        self.now += self.r.u16() * self.r.pick(SCALES)
        self.collect(self.c.tick(self.now))

    def run(self) -> None:
        for step in range(MAX_STEPS):
            if self.r.left() <= 0:
                break
            if self.r.u8() % 3 == 0:
                self.tick()
            else:
                self.send()
            self.replay_agrees(f"after step {step}")
        for _ in range(4):   # past the longest timeout an input can ask for (10**7 ms rebalance timeout)
            self.now += 3 * 3600 * 1000
            self.collect(self.c.tick(self.now))
        self.replay_agrees("at the end")
        for token in [t for t in self.parked if t in self.owner and self.latest[self.owner[t]] != t]:
            # superseded: the same member sent a newer JoinGroup/SyncGroup while this one was parked;
            # Kafka's classic coordinator replaces the waiting future and never completes the old one
            # (ClassicGroup.updateMember), and kshim does the same
            del self.parked[token]
        if self.parked:
            left = sorted({(api.API_KEYS[k], v) for k, v in self.parked.values()})
            raise Finding(f"requests never answered after the clock moved 12 hours on: {left}")


_SCHEMAS: dict[int, dict] = {}


def _schemas(load) -> dict[int, dict]:
    if not _SCHEMAS:
        schemas = load()
        for key in VERSIONS:
            cls = api.REQUESTS[key]
            _SCHEMAS[key] = schemas.get(cls.__name__) or schemas[api.API_KEYS[key] + "Request"]
    return _SCHEMAS


def run(data: bytes) -> None:
    """One input. Raises Finding (or anything else) on a bug."""
    Program(data).run()
