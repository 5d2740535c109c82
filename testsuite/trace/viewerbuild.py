"""Synthetic analysis tables (the columns of timeline.py, members.py and partition_tables.py) for the
report and export tests and for screenshots at scale: N members of one classic cooperative group
consuming P partitions, with a member leaving on poll timeout, a static bounce (no rebalance), a
member killed (session timeout) and a member joining, plus the frames behind causes and changes."""

from __future__ import annotations

from shim.trace.analyze.frames import frame_key
from shim.trace.analyze.gaps import partition_gaps
from shim.trace.analyze.partition_tables import CAUSE_COLUMNS, IMPACT_COLUMNS, OWNER_COLUMNS, row

T0 = 1_764_000_000_000
G = "orders"


def build(members: int = 6, partitions: int = 24, topics: int = 2) -> tuple[dict, dict]:
    """(tables, linked frames)."""
    ids = {k: f"consumer-{G}-{k + 1}-{k:08x}-5e1f-4c2a-9b7d-{k * 7919:012x}" for k in range(members + 1)}
    inst = {k: f"{G}-static-{k}" if k % 3 == 0 else None for k in range(members + 1)}
    parts = [(f"topic-{t}", p) for t in range(topics) for p in range(partitions // topics)]
    tables = {k: [] for k in ("rebalances", "generation_members", "changes", "members", "anomalies",
                              "partition_owners", "causes", "rebalance_impact")}
    frames, by_ts = {}, {}
    conn = [100]

    def frame(t, api, req, resp, member):
        conn[0] += 1
        key = frame_key(G, conn[0], 7)
        ts = (t - T0) * 1_000_000
        frames[key] = [{"dir": "client->kshim", "api": api, "v": 9, "conn": conn[0], "corr": 7, "wall_ms": t,
                        "errors": None, "body": {"groupId": G, "memberId": member, **req}},
                       {"dir": "kshim->client", "api": api, "v": 9, "conn": conn[0], "corr": 7, "wall_ms": t + 3,
                        "errors": None, "body": {"errorCode": 0, **resp}}]
        by_ts[(G, ts)] = key
        return conn[0], 7, ts

    def change(t, kind, k, reason=None, gen=None):
        c, corr, ts = frame(t, "LeaveGroup" if kind == "left" else "JoinGroup", {"reason": reason}, {}, ids[k])
        tables["changes"].append({"group": G, "wall_ms": t, "ts_ns": ts, "generation": gen, "kind": kind,
                                  "member": ids[k], "instance": inst[k], "client_id": f"consumer-{G}-{k + 1}",
                                  "reason": reason, "detail": None})
        return c, corr, ts

    # (generation, start, formed, alive members, trigger (kind, member, reason))
    alive = list(range(members))
    rounds = [(1, T0, T0 + 3000, list(alive), ("joined", 0, "initial join"))]
    after_poll = [k for k in alive if k != 1]
    rounds.append((2, T0 + 60_000, T0 + 63_500, after_poll, ("poll_interval_exceeded", 1,
                                                            "consumer poll timeout has expired.")))
    after_kill = [k for k in after_poll if k != 2]
    rounds.append((3, T0 + 225_000, T0 + 228_000, after_kill, ("session_timeout", 2, "last heartbeat 180.000 s")))
    rounds.append((4, T0 + 300_000, T0 + 304_000, after_kill + [members], ("joined", members, "need to re-join")))
    end = T0 + 400_000
    owner: dict[tuple, dict] = {}
    for n, (gen, start, formed, who, (kind, k, reason)) in enumerate(rounds):
        c, corr, ts = change(start, "left" if kind == "poll_interval_exceeded" else kind
                             if kind != "session_timeout" else "session_timeout", k, reason, gen - 1 or None)
        tables["causes"].append(row(CAUSE_COLUMNS, group=G, group_type="classic", generation=gen, cause_id=f"{G}:{gen}",
                                    seq=0, wall_ms=start, kind=kind, member=ids[k], instance=inst[k],
                                    client_id=f"consumer-{G}-{k + 1}", reason=reason, conn=c, corr=corr, ts_ns=ts,
                                    last_heartbeat_wall_ms=T0 + 180_000 if kind == "session_timeout" else None,
                                    timeout_ms=45_000 if kind == "session_timeout" else None))
        nxt = rounds[n + 1][1] if n + 1 < len(rounds) else None
        assign = sticky({p: o["_m"] for p, o in owner.items()}, parts, who)
        for i, m in enumerate(who):
            sync = formed + 37 * i % 900
            mine = [f"{t}-{p}" for (t, p), o in assign.items() if o == m]
            mid = ids[m] + "-b" if m == 0 and gen > 2 else ids[m]
            tables["generation_members"].append({"group": G, "generation": gen, "member": mid, "instance": inst[m],
                                                 "from_wall_ms": formed, "to_wall_ms": nxt, "assignment": mine,
                                                 "leader": i == 0})
        moved = 0
        for p, m in assign.items():
            o = owner.get(p)
            if o is not None and o["_m"] == m:
                continue
            sync = formed + 37 * who.index(m) % 900
            if o is not None:
                moved += 1
                o["to_wall_ms"] = o.get("_gone", start + 150 * (o["_m"] % 7))
                o["end_kind"] = {1: "poll_timeout", 2: "session_timeout"}.get(o["_m"], "revoked")
                o["end_generation"] = gen
                o["last_seen_wall_ms"] = T0 + 180_000 if o["_m"] == 2 else None
            owner[p] = row(OWNER_COLUMNS, group=G, group_type="classic", topic=p[0], partition=p[1], member=ids[m],
                           instance=inst[m], client_id=f"consumer-{G}-{m + 1}", generation=gen, protocol="cooperative",
                           from_wall_ms=sync)
            owner[p]["_m"] = m
            tables["partition_owners"].append(owner[p])
        tables["rebalances"].append({"group": G, "generation": gen, "reason": reason, "start_wall_ms": start,
                                     "last_sync_wall_ms": formed + 900, "join_to_sync_ms": formed + 900 - start,
                                     "members": len(who), "leader": ids[who[0]], "joined": [], "left": [],
                                     "fenced": [], "skip_assignment": [], "partitions_moved": moved,
                                     "slow_rejoins": []})
        if gen == 2:      # the static bounce of member 0: its partitions wait for the new incarnation
            bounce = T0 + 125_000
            for p, o in list(owner.items()):
                if o["_m"] == 0:
                    o.update(to_wall_ms=bounce, end_kind="static_replaced", last_seen_wall_ms=T0 + 118_000)
                    new = row(OWNER_COLUMNS, **{k: v for k, v in o.items() if not k.startswith("_")})
                    new.update(member=ids[0] + "-b", from_wall_ms=bounce + 40, to_wall_ms=None, end_kind=None,
                               last_seen_wall_ms=None)
                    new["_m"] = 0
                    owner[p] = new
                    tables["partition_owners"].append(new)
            change(bounce, "static_rejoin", 0, "static member rejoined without rebalance", gen)
            old = next(r for r in tables["generation_members"] if r["generation"] == 2 and r["member"] == ids[0])
            tables["generation_members"].append({**old, "member": ids[0] + "-b", "from_wall_ms": bounce + 40})
            old["to_wall_ms"] = bounce
    for o in tables["partition_owners"]:
        o.pop("_m", None)
        if o["to_wall_ms"] is None:
            o["end_kind"] = "trace_end"
    tables["partition_gaps"] = partition_gaps(tables["partition_owners"], end)
    for gen, start, formed, who, (kind, k, reason) in rounds:
        gs = [g for g in tables["partition_gaps"] if g["generation"] == gen and not g["initial"]]
        tables["rebalance_impact"].append(row(
            IMPACT_COLUMNS, group=G, group_type="classic", generation=gen, protocol="cooperative", start_wall_ms=start,
            end_wall_ms=formed + 900, partitions_unavailable=len({(g["topic"], g["partition"]) for g in gs}),
            max_gap_ms=max((g["duration_ms"] for g in gs), default=None),
            unavailable_partition_ms=sum(g["duration_ms"] for g in gs), slowest_rejoin_member=ids[who[-1]],
            slowest_rejoin_ms=formed + 900 - start, cause_id=f"{G}:{gen}", cause=f"{kind} {ids[k]}: {reason}"))
    for k in range(members + 1):
        last = {1: T0 + 60_000, 2: T0 + 180_000, 0: end}.get(k, end)
        tables["members"].append({"group": G, "member": ids[k], "instance": inst[k], "heartbeats": 100,
                                  "first_wall_ms": T0, "last_wall_ms": last, "heartbeat_gap_avg_ms": 3000.0,
                                  "heartbeat_gap_max_ms": 3100.0, "session_timeout_ms": 45000,
                                  "silence_max_ms": 3100.0, "silences_over_session_timeout": 0, "commits": 50,
                                  "commit_interval_avg_ms": 5000.0})
    tables["members"].append({**tables["members"][0], "member": ids[0] + "-b", "first_wall_ms": T0 + 125_000})
    tables["members"][0]["last_wall_ms"] = T0 + 118_000
    return tables, {"frames": frames, "by_ts": by_ts}


def sticky(prev: dict, parts: list, who: list[int]) -> dict:
    """Cooperative-sticky in spirit: a partition stays with its owner while the owner is alive and
    under its quota; the rest go to the least loaded members."""
    quota = -(-len(parts) // len(who))
    counts = {m: 0 for m in who}
    out = {}
    for p in parts:
        if prev.get(p) in counts and counts[prev[p]] < quota:
            out[p] = prev[p]
            counts[prev[p]] += 1
    for p in parts:
        if p not in out:
            out[p] = min(who, key=lambda m: (counts[m], m))
            counts[out[p]] += 1
    return out


SUMMARY = {"trace": "synthetic", "records": None, "group_records": 0, "master": "none", "made": "now"}
