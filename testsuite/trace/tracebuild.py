"""Hand-built kshim traces for the analysis tests: records shaped exactly as shim/trace/tracer.py
writes them (header fields, Kafka-JSON bodies, fields promoted from the body and, on answers, from
their request), written through the real sinks (gzip JSON lines or Parquet).

`scenario()` is one group `g` on topic `t` (4 partitions), times in ms from the trace start:

  0     A JoinGroup (no member id) -> MEMBER_ID_REQUIRED (A-1)
  2     A JoinGroup A-1 -> rebalance; 3002 generation 1 (A-1 leads); 3010 SyncGroup: A-1 gets t-0..3
  4000.. A-1 heartbeats (4000, 7000, 10000, 12500 REBALANCE_IN_PROGRESS, 15100, 22000)
  12000 B JoinGroup (instance b, reason "hello") -> rebalance; A-1 rejoins at 12600 with a 500 ms
        rebalance timeout (late); 12601 generation 2; A-1 keeps t-0,t-1, b gets t-2,t-3 (12703 done)
  20000 b restarts: static member B-2 replaces B-1, no rebalance; B-2 syncs and gets t-2,t-3
  25000 the old B-1 heartbeats: FENCED_INSTANCE_ID
  30000 A-1 LeaveGroup (reason "bye") -> rebalance; B-2 rejoins 30600; 30601 generation 3 (B-2 leads,
        gets all 4); 30701 done; B-2 heartbeats 33000, 36000, then silent 12 s (session timeout 10 s)
        until 48000; commits at 33500 and 35500
"""

from __future__ import annotations

import base64

from shim.trace.analyze.assignment import encode_assignment
from shim.trace.sink import open_sink

W0 = 1_790_000_000_000
API = {8: "OffsetCommit", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
       68: "ConsumerGroupHeartbeat"}
PROMOTE = (("groupId", "group"), ("memberId", "member"), ("groupInstanceId", "instance"),
           ("generationId", "generation"))


def b64(parts: list[int], topic: str = "t") -> str:
    return base64.b64encode(encode_assignment({topic: parts}, 1)).decode()


class Trace:
    def __init__(self, group: str = "g"):
        self.group = group
        self.records: list[dict] = []
        self._ctx: dict = {}
        self._corr = 0

    def _rec(self, t: float, **fields) -> dict:
        rec = {"ts_ns": int(t * 1_000_000), "wall_ms": W0 + int(t), **fields}
        self.records.append(rec)
        return rec

    def _frame(self, t, conn, direction, api, corr, body, version, ctx=None) -> dict:
        rec = self._rec(t, type="frame", conn=conn, dir=direction, client_id=f"client-{conn}", api_key=api,
                        api=API[api], api_version=version, corr=corr, size=50, body=body)
        for key, name in PROMOTE:
            if body.get(key) not in (None, ""):
                rec[name] = body[key]
        for k, v in (ctx or {}).items():
            rec.setdefault(k, v)
        if body.get("errorCode"):
            rec["error_codes"] = [body["errorCode"]]
        return rec

    def call(self, t_req, t_resp, conn, api, req: dict, resp: dict, version: int = 9) -> None:
        """A request (client->kshim) and kshim's answer (kshim->client); t_resp None: no answer (yet)."""
        self._corr += 1
        body = {"groupId": self.group, **req}
        r = self._frame(t_req, conn, "client->kshim", api, self._corr, body, version)
        if t_resp is not None:
            ctx = {k: r[k] for k in ("group", "instance", "member", "generation") if k in r}
            self._frame(t_resp, conn, "kshim->client", api, self._corr, resp, version, ctx)

    def event(self, t, kind: str, **fields) -> None:
        body = {"event": kind, "group": self.group, "ts": int(t), **fields}
        rec = self._rec(t, type="event", event=kind, group=self.group, body=body)
        for key in ("member", "instance", "generation"):
            if fields.get(key) is not None:
                rec[key] = fields[key]

    def sorted(self) -> list[dict]:
        return sorted(self.records, key=lambda r: r["ts_ns"])

    def write(self, directory, fmt: str = "jsonl", rotate_bytes: int = 1 << 20) -> None:
        sink = open_sink(fmt, directory, rotate_bytes)
        recs = self.sorted()
        for i in range(0, len(recs), 7):   # several writes, like the tracer's batches
            sink.write(recs[i:i + 7])
        sink.close()


def join_req(member="", instance=None, reason=None, session=10000, rebalance=30000) -> dict:
    return {"sessionTimeoutMs": session, "rebalanceTimeoutMs": rebalance, "memberId": member,
            "groupInstanceId": instance, "protocolType": "consumer", "reason": reason,
            "protocols": [{"name": "range", "metadata": "AAE="}]}


def join_resp(gen, member, leader, members=(), error=0, skip=False) -> dict:
    return {"throttleTimeMs": 0, "errorCode": error, "generationId": gen, "protocolType": "consumer",
            "protocolName": "range", "leader": leader, "skipAssignment": skip, "memberId": member,
            "members": [{"memberId": m, "groupInstanceId": i, "metadata": "AAE="} for m, i in members]}


def sync_req(gen, member, instance=None, assignments=None) -> dict:
    return {"generationId": gen, "memberId": member, "groupInstanceId": instance, "protocolType": "consumer",
            "protocolName": "range",
            "assignments": [{"memberId": m, "assignment": b64(p)} for m, p in (assignments or {}).items()]}


def sync_resp(parts, error=0) -> dict:
    return {"throttleTimeMs": 0, "errorCode": error, "protocolType": "consumer", "protocolName": "range",
            "assignment": b64(parts) if parts is not None else ""}


def hb(tr: Trace, t, conn, gen, member, instance=None, error=0) -> None:
    tr.call(t, t + 1, conn, 12, {"generationId": gen, "memberId": member, "groupInstanceId": instance},
            {"throttleTimeMs": 0, "errorCode": error}, 4)


def scenario() -> Trace:
    tr = Trace("g")
    a, b, b2 = 1, 2, 3                                     # connections
    tr.call(0, 1, a, 11, join_req(reason="first"), join_resp(-1, "A-1", "", error=79))
    tr.event(1, "member_id_required", member="A-1", client_id="client-1")
    tr.call(2, 3002, a, 11, join_req("A-1", reason="first"), join_resp(1, "A-1", "A-1", [("A-1", None)]))
    tr.event(2.1, "member_joined", member="A-1", instance=None, client_id="client-1", reason="first", new=True)
    tr.event(2.2, "state", frm="Empty", to="PreparingRebalance", generation=0)
    tr.event(2.3, "rebalance", reason="adding new member A-1 with group instance id None; client reason: first",
             generation=0)
    tr.event(3001.5, "generation", generation=1, members=1, leader="A-1", protocol="range")
    tr.call(3010, 3011, a, 14, sync_req(1, "A-1", assignments={"A-1": [0, 1, 2, 3]}), sync_resp([0, 1, 2, 3]), 5)
    for t in (4000, 7000, 10000, 22000):
        hb(tr, t, a, 1, "A-1")
    # B joins (static, instance b): a rebalance; A-1 rejoins late for its 500 ms rebalance timeout
    tr.call(12000, 12601.2, b, 11, join_req("", "b", reason="hello"),
            join_resp(2, "B-1", "A-1"))
    tr.event(12000.1, "member_joined", member="B-1", instance="b", client_id="client-2", reason="hello", new=True)
    tr.event(12000.2, "rebalance", reason="adding new member B-1 with group instance id b; client reason: hello",
             generation=1)
    hb(tr, 12500, a, 1, "A-1", error=27)
    tr.call(12600, 12601.1, a, 11, join_req("A-1", reason="rebalance", rebalance=500),
            join_resp(2, "A-1", "A-1", [("A-1", None), ("B-1", "b")]))
    tr.event(12600.1, "member_joined", member="A-1", instance=None, reason="rebalance")
    tr.event(12601, "generation", generation=2, members=2, leader="A-1", protocol="range")
    tr.call(12700, 12701, a, 14, sync_req(2, "A-1", assignments={"A-1": [0, 1], "B-1": [2, 3]}), sync_resp([0, 1]), 5)
    tr.call(12702, 12703, b, 14, sync_req(2, "B-1", "b"), sync_resp([2, 3]), 5)
    hb(tr, 15000, b, 2, "B-1", "b")
    hb(tr, 15100, a, 2, "A-1")
    # b restarts within its session timeout: same generation, new member id
    tr.call(20000, 20000.3, b2, 11, join_req("", "b", reason="restart"), join_resp(2, "B-2", "A-1"))
    tr.event(20000.1, "static_member_replaced", instance="b", old_member="B-1", member="B-2", reason="restart")
    tr.event(20000.2, "static_rejoin_without_rebalance", instance="b", member="B-2", leader=False,
             skip_assignment=False, generation=2)
    tr.call(20100, 20101, b2, 14, sync_req(2, "B-2", "b"), sync_resp([2, 3]), 5)
    hb(tr, 25000, b, 2, "B-1", "b", error=82)             # the old incarnation is fenced
    # A leaves: a rebalance; B-2 rejoins and leads generation 3
    tr.call(30000, 30000.5, a, 13, {"members": [{"memberId": "A-1", "groupInstanceId": None, "reason": "bye"}]},
            {"throttleTimeMs": 0, "errorCode": 0, "members": [{"memberId": "A-1", "errorCode": 0}]}, 5)
    tr.event(30000.2, "member_left", member="A-1", instance=None, reason="bye")
    tr.event(30000.3, "rebalance", reason="1 member(s) left the group", generation=2)
    hb(tr, 30500, b2, 2, "B-2", "b", error=27)
    tr.call(30600, 30601.1, b2, 11, join_req("B-2", "b", reason="rebalance"),
            join_resp(3, "B-2", "B-2", [("B-2", "b")]))
    tr.event(30601, "generation", generation=3, members=1, leader="B-2", protocol="range")
    tr.call(30700, 30701, b2, 14, sync_req(3, "B-2", "b", {"B-2": [0, 1, 2, 3]}), sync_resp([0, 1, 2, 3]), 5)
    for t in (33000, 36000, 48000):
        hb(tr, t, b2, 3, "B-2", "b")
    tr.call(33500, 33501, b2, 8, {"generationIdOrMemberEpoch": 3, "memberId": "B-2", "groupInstanceId": "b",
                                  "topics": []}, {"throttleTimeMs": 0, "topics": []}, 8)
    tr.call(35500, 35501, b2, 8, {"generationIdOrMemberEpoch": 3, "memberId": "B-2", "groupInstanceId": "b",
                                  "topics": []}, {"throttleTimeMs": 0, "topics": []}, 8)
    return tr
