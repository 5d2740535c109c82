"""Anomaly flags from the timelines and the member table (pure Python, small inputs):

  rebalance_storm      >= `storm_count` rebalances of one group within `storm_window_ms`
  flapping_member      one member identity (group.instance.id, else client id) leaving or removed
                       >= `flap_count` times
  static_new_member_id a static member rejoined with a new member id (severity info when the
                       coordinator kept the generation, warn when that rejoin started a rebalance)
  slow_revocation      a member rejoined later than its rebalance timeout after the rebalance
                       started, or was dropped for not rejoining / not syncing in time
  session_gap          a member sent and got nothing (no group request or answer) for longer than its
                       session timeout
"""

from __future__ import annotations

from collections import Counter, defaultdict

STORM_COUNT, STORM_WINDOW_MS, FLAP_COUNT = 5, 60_000, 3


def _row(group, kind, severity, wall_ms, subject, detail) -> dict:
    return {"group": group, "kind": kind, "severity": severity, "wall_ms": wall_ms, "subject": subject,
            "detail": detail}


def storms(rounds: list[dict], count: int = STORM_COUNT, window_ms: int = STORM_WINDOW_MS) -> list[dict]:
    out = []
    by_group = defaultdict(list)
    for r in rounds:
        t = r.get("start_wall_ms")
        t = r.get("generation_wall_ms") if t is None else t
        if t is not None and r.get("generation") is not None:
            by_group[r["group"]].append((t, r["generation"]))
    for group, items in by_group.items():
        items.sort()
        i, j, n = 0, 0, len(items)
        while i < n:
            while j < n and items[j][0] - items[i][0] <= window_ms:
                j += 1
            if j - i >= count:   # maximal run starting at i: report it, continue after it
                out.append(_row(group, "rebalance_storm", "warn", items[i][0], f"generations {items[i][1]}-{items[j - 1][1]}",
                                f"{j - i} rebalances in {(items[j - 1][0] - items[i][0]) / 1000:.1f} s"))
                i = j
            else:
                i += 1
    return out


def flapping(changes: list[dict], count: int = FLAP_COUNT) -> list[dict]:
    """Dynamic members get a new member id every time: they are counted by client id."""
    n: Counter = Counter()
    last: dict = {}
    for c in changes:
        if c["kind"] in ("left", "removed"):
            ident = c.get("instance") or c.get("client_id") or c.get("member")
            n[(c["group"], ident)] += 1
            last[(c["group"], ident)] = c.get("wall_ms")
    return [_row(g, "flapping_member", "warn", last[(g, ident)], ident, f"left or removed {k} times")
            for (g, ident), k in sorted(n.items(), key=lambda x: (x[0][0], str(x[0][1]))) if k >= count]


def static_new_ids(changes: list[dict]) -> list[dict]:
    out = []
    by_group = defaultdict(list)
    for c in changes:
        by_group[c["group"]].append(c)
    for group, items in by_group.items():
        for i, c in enumerate(items):
            if c["kind"] != "static_replaced":
                continue
            kept = any(x["kind"] == "static_rejoin" and x.get("member") == c.get("member") for x in items[i + 1:i + 4])
            out.append(_row(group, "static_new_member_id", "info" if kept else "warn", c.get("wall_ms"),
                            c.get("instance"), f"{c.get('detail')} -> {c.get('member')}; "
                            + ("generation kept (no rebalance)" if kept else "rebalance needed")))
    return out


def slow_revocations(rounds: list[dict]) -> list[dict]:
    return [_row(r["group"], "slow_revocation", "warn", r.get("start_wall_ms"), s.split(":")[0],
                 f"generation {r.get('generation')}: {s}") for r in rounds for s in r.get("slow_rejoins") or ()]


def session_gaps(members: list[dict]) -> list[dict]:
    return [_row(m["group"], "session_gap", "warn", m.get("last_wall_ms"), m.get("instance") or m["member"],
                 f"{m['silences_over_session_timeout']} silence(s) over the {m.get('session_timeout_ms')} ms session "
                 f"timeout (longest {m.get('silence_max_ms')} ms)")
            for m in members if (m.get("silences_over_session_timeout") or 0) > 0]


def anomalies(rounds, changes, members) -> list[dict]:
    out = storms(rounds) + flapping(changes) + static_new_ids(changes) + slow_revocations(rounds) \
        + session_gaps(members)
    return sorted(out, key=lambda a: (a["group"], a["wall_ms"] or 0, a["kind"]))
