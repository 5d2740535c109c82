"""Run a scenario in lock-step on two targets (`Side`s): each step is resolved and sent on both, then
both answers are awaited; a request neither answers within `PARK_S` is parked (a JoinGroup waiting
for the others) and its answer is collected whenever it comes. Each side learns member ids,
generations, epochs and assignments from its own answers, as a client would."""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kcodec import api
from kcodec.generated.consumer_protocol_assignment import ConsumerProtocolAssignment, TopicPartition
from kcodec.generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from kcodec.protocol import ApiKey, Error

from .build import b64, build, resolve
from .generate import CG_HEARTBEAT, JOIN, TOPICS, Scenario, member_id_for
from .groups_gen import SG_HEARTBEAT, ST_HEARTBEAT, client_uuid
from .txn_gen import END_TXN, INIT_PRODUCER_ID

if TYPE_CHECKING:
    from .target import Target

PARK_S = 0.3          # no answer within this: parked (on both sides)
STRAGGLER_S = 3.0     # one side answered: how long the other may take
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


class Conn:
    """One client connection of a side: requests in order, answers matched by correlation id."""

    def __init__(self, side: "Side", name: str):
        self.side, self.name = side, name
        self.reader = self.writer = None
        self.waiting: list = []          # (correlation id, api key, version, step index)
        self.corr = 0
        self.task = None

    async def open(self, host: str, port: int) -> None:
        self.reader, self.writer = await asyncio.open_connection(host, port)
        self.task = asyncio.get_running_loop().create_task(self._read())

    def send(self, api_key: int, version: int, req, idx: int, trailing: bytes = b"") -> None:
        self.corr += 1
        hdr = api.RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=self.corr,
                                client_id=f"kw-{self.name.split('#')[0]}")
        payload = hdr.encode(api.request_header_version(api_key, version)) + req.encode(version) + trailing
        self.waiting.append((self.corr, api_key, version, idx))
        self.writer.write(struct.pack(">i", len(payload)) + payload)

    @property
    def busy(self) -> bool:
        return bool(self.waiting)

    async def _read(self) -> None:
        try:
            while True:
                size = struct.unpack(">i", await self.reader.readexactly(4))[0]
                frame = await self.reader.readexactly(size)
                corr, api_key, version, idx = self.waiting.pop(0)
                rhv = 0 if api_key == ApiKey.API_VERSIONS else api.response_header_version(api_key, version)
                hdr, pos = api.ResponseHeader.decode_from(frame, 0, rhv)
                resp = api.RESPONSES[api_key].decode(memoryview(frame)[pos:], version)
                self.side.answered(idx, ("ok", resp.to_json(version)))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        except Exception as e:           # an answer kcodec cannot read is itself an observation
            if self.waiting:
                self.side.answered(self.waiting.pop(0)[3], ("undecodable", str(e)))
        for *_, idx in self.waiting:
            self.side.answered(idx, ("closed",))
        self.waiting.clear()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.task is not None:
            self.task.cancel()


@dataclass
class MemberState:
    mid: str = ""
    gen: int = -1
    epoch: int = 0
    protocol: str | None = None
    join: dict | None = None          # its last successful JoinGroup answer
    owned: list = field(default_factory=list)
    tasks: list = field(default_factory=list)   # a streams member's active tasks


class Side:
    """One target (a bootstrap) running one scenario."""

    def __init__(self, target: "Target", scenario: Scenario):
        self.t, self.sc = target, scenario
        self.conns: dict[str, Conn] = {}
        self.extra = 0
        self.state = {m: MemberState() for m in scenario.members}
        self.answers: dict[int, tuple] = {}
        self.events: dict[int, asyncio.Event] = {}
        self.ids: dict[str, str] = {}     # member id -> symbol
        for m, spec in scenario.members.items():
            if spec["kind"] == "consumer":
                self.ids[member_id_for(scenario.seed, m)] = m
            elif spec["kind"] in ("share", "streams"):
                self.ids[client_uuid(scenario.seed, m)] = m
        self.sent: dict[int, str] = {}    # step index -> member
        self.producers: dict[str, tuple[int, int]] = {}     # connection -> (producer id, epoch)
        # a scenario run again on the same target (shrinking) gets fresh group ids
        self.tag = f"{scenario.seed}" + (f"r{target.runs[scenario.seed]}" if target.runs.get(scenario.seed) else "")
        target.runs[scenario.seed] = target.runs.get(scenario.seed, 0) + 1

    # ------------------------------------------------------------------ names
    def group(self, sym: str) -> str:
        return f"{self.t.prefix}-{self.tag}-{sym}" if sym else ""

    def group_symbol(self, name: str) -> str | None:
        head = f"{self.t.prefix}-{self.tag}-"
        return name[len(head):] if name.startswith(head) else None

    def lookup(self, kind: str, arg: str):
        st = self.state.get(arg)
        if kind == "group":
            return self.group(arg)
        if kind == "txn":
            return self.group(f"txn{arg}")
        if kind in ("pid", "pepoch"):        # a transactional producer's id and epoch (txn_gen.py)
            return self.producers.get(arg, (-1, -1))[kind == "pepoch"]
        if kind == "topic":
            return self.t.topic(arg)
        if kind == "topicid":
            return self.t.topic_ids.get(arg, ZERO_UUID)
        if kind == "regex":
            return self.t.regex(arg)
        if kind == "mid":
            return st.mid if st else arg
        if kind == "cmid":
            return member_id_for(self.sc.seed, arg)
        if kind == "smid":
            return client_uuid(self.sc.seed, arg)
        if kind == "sprocess":
            return client_uuid(self.sc.seed, arg, "process")
        if kind == "tasks":
            return st.tasks
        if kind in ("gen", "gen+1"):
            return st.gen + (kind == "gen+1")
        if kind in ("epoch", "epoch+1", "epoch-1"):
            return st.epoch + {"epoch": 0, "epoch+1": 1, "epoch-1": -1}[kind]
        if kind == "protocol":
            return st.protocol or "range"
        if kind == "owned":
            return st.owned
        if kind == "subscription":
            sub = ConsumerProtocolSubscription(topics=[self.t.topic(t) for t in arg.split(",")])
            return b64(struct.pack(">h", 1) + sub.encode(1))
        if kind == "assignments":
            return self.assignments(arg)
        raise ValueError(f"unknown symbol ${kind}:{arg}")

    def assignments(self, name: str) -> list:
        """The leader's SyncGroup assignments: partitions of t1 and t2 dealt round-robin over the
        members of its last JoinGroup answer, in symbol order (the same on both targets)."""
        st = self.state[name]
        j = st.join
        if not j or j.get("leader") != st.mid or not j.get("members"):
            return []
        members = sorted(j["members"], key=lambda mm: self.ids.get(mm["memberId"], "~" + mm["memberId"]))
        parts = [(t, p) for t, n in sorted(TOPICS.items()) for p in range(n)]
        out = []
        for i, mm in enumerate(members):
            mine = {}
            for t, p in parts[i::len(members)]:
                mine.setdefault(self.t.topic(t), []).append(p)
            a = ConsumerProtocolAssignment(assigned_partitions=[TopicPartition(topic=t, partitions=ps)
                                                                for t, ps in mine.items()])
            out.append({"memberId": mm["memberId"], "assignment": b64(struct.pack(">h", 0) + a.encode(0))})
        return out

    # ------------------------------------------------------------------ sending and answers
    async def conn_for(self, name: str, pipe: bool) -> Conn:
        c = self.conns.get(name)
        if c is not None and (not c.busy or pipe):
            return c
        if c is not None:                 # busy and not pipelined: an extra connection
            self.extra += 1
            name = f"{name}#{self.extra}"
        c = Conn(self, name)
        member = self.sc.members.get(name.split("#")[0])
        host, port = await self.t.coordinator(self.group(member["group"] if member else "g1"))
        await c.open(host, port)
        if name not in self.conns:
            self.conns[name] = c
        return c

    async def send(self, idx: int, step: dict) -> None:
        self.events[idx] = asyncio.Event()
        body = resolve(step["body"], self.lookup)
        req = build(step["api"], step["v"], body)
        conn = await self.conn_for(step["conn"], step.get("pipe", False))
        self.sent[idx] = step["conn"]
        conn.send(step["api"], step["v"], req, idx, bytes.fromhex(step.get("trailing", "")))

    def answered(self, idx: int, answer: tuple) -> None:
        self.answers[idx] = answer
        step = self.sc.steps[idx]
        if answer[0] == "ok" and step["conn"] in self.state:
            self.learn(self.state[step["conn"]], step, answer[1])
        elif answer[0] == "ok" and step["api"] in (INIT_PRODUCER_ID, END_TXN):
            r = answer[1]       # (EndTxn v5+ answers the epoch transactions v2 bumped)
            if r.get("errorCode", 0) == Error.NONE and r.get("producerId", -1) >= 0:
                self.producers[step["conn"]] = (r["producerId"], r["producerEpoch"])
        ev = self.events.get(idx)
        if ev is not None:
            ev.set()

    def learn(self, st: MemberState, step: dict, r: dict) -> None:
        err = r.get("errorCode", 0)
        if step["api"] == JOIN:
            if err == Error.NONE:
                st.mid, st.gen, st.protocol, st.join = r["memberId"], r["generationId"], r.get("protocolName"), r
            elif err == Error.MEMBER_ID_REQUIRED:
                st.mid = r["memberId"]
            if st.mid:
                self.ids.setdefault(st.mid, step["conn"])
        elif step["api"] == CG_HEARTBEAT:
            if err == Error.NONE:
                st.epoch = r["memberEpoch"]
                if r.get("assignment") is not None:
                    st.owned = r["assignment"]["topicPartitions"]
            elif err in (Error.UNKNOWN_MEMBER_ID, Error.FENCED_MEMBER_EPOCH):
                st.epoch, st.owned = 0, []
        elif step["api"] in (SG_HEARTBEAT, ST_HEARTBEAT):
            if err == Error.NONE:
                st.epoch = r["memberEpoch"]
                if step["api"] == ST_HEARTBEAT and r.get("activeTasks") is not None:
                    st.tasks = r["activeTasks"]
            elif err in (Error.UNKNOWN_MEMBER_ID, Error.FENCED_MEMBER_EPOCH):
                st.epoch, st.tasks = 0, []
        elif err == Error.UNKNOWN_MEMBER_ID and st.mid and step["conn"] in self.sc.members:
            st.mid = ""                     # a classic client forgets its id and joins afresh

    async def wait(self, idx: int, timeout: float) -> bool:
        if idx in self.answers:
            return True
        try:
            await asyncio.wait_for(self.events[idx].wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    def close(self) -> None:
        for c in self.conns.values():
            c.close()


async def run_scenario(sc: Scenario, a: "Target", b: "Target") -> tuple[Side, Side]:
    """Run every step on both sides in lock-step; returns both sides with their answers."""
    sides = (Side(a, sc), Side(b, sc))
    try:
        for idx, step in enumerate(sc.steps):
            if "sleep" in step:
                await asyncio.sleep(step["sleep"] / 1000)
                continue
            await asyncio.gather(*(s.send(idx, step) for s in sides))
            done = await asyncio.gather(*(s.wait(idx, PARK_S) for s in sides))
            if any(done) and not all(done):
                await asyncio.gather(*(s.wait(idx, STRAGGLER_S) for s in sides))
        await _drain(sides)
    finally:
        for s in sides:
            s.close()
    return sides


async def _drain(sides) -> None:
    """At the end: parked requests answered on one side get time to be answered on the other."""
    open_ = [i for s in sides for i in s.sent if i not in s.answers]
    if not open_:
        return
    await asyncio.sleep(0.5)
    for idx in sorted(set(open_)):
        if any(idx in s.answers for s in sides):
            await asyncio.gather(*(s.wait(idx, STRAGGLER_S) for s in sides if idx in s.events))
