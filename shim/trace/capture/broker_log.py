"""Apache Kafka brokers' own `server.log` files into kshim trace `event` records, so a capture taken
on a real cluster (kshim not in the path) still names the group coordinator's own reasons.

`parse_broker_logs(paths, tz)` reads plain or gzip'd files, a rotated set (server.log,
server.log.2026-11-28-10, server.log.1, ...) and several brokers' logs as one input in time order
(each file keeps its own line order), in any layout Kafka ships: `[%d] %p %m (%c)%n` of log4j 1
(3.x config/log4j.properties) and log4j2 (4.x config/log4j2.yaml), or an ISO-8601 stamp
(`2026-11-28T10:15:03.123Z`, `+01:00`). Lines that do not start with a stamp (stack traces) are
continuation lines and are skipped.

Time zone: Kafka's default `%d` has no zone; it is the broker host's local time. `tz` (a tzinfo,
default UTC) says which zone the stamps are in; a stamp that carries its own zone uses that.

The statements read (broker_log_lines.py has the expressions) come from the group coordinator:
org.apache.kafka.coordinator.group.GroupMetadataManager and GroupCoordinatorShard (the new
coordinator: Kafka 4.x; Kafka 3.9 only with `group.coordinator.rebalance.protocols=classic,consumer`),
kafka.coordinator.group.GroupCoordinator and GroupMetadataManager (the Scala coordinator, Kafka 3.9's
default), modern.consumer.TopicRegexResolver. Each becomes a record shaped like kshim's own
coordinator events (same kinds, same body fields: records.event_record) plus `wall_ms`,
`source: "broker_log"` and `broker_log: {file, line, node, partition, level, logger, text}`:

  rebalance            "Preparing to rebalance group G in state S with old generation N (reason: R)":
                       body reason (the coordinator's own text), generation (the old one)
  generation           "Stabilized group G generation N with K members" / "Group G with generation N
                       is now empty" (members 0)
  assignment           "Assignment received from leader L for group G for generation N ..."
  member_id_required   "Dynamic member with unknown member id joins ... requesting the member to rejoin"
  member_joined        "... Created a new member id M ... added to the group", "Pending dynamic member
                       with id M joins group G" (new=True); KIP-848: "Member M joins the consumer group
                       using the P protocol", "Static member M with instance id I joins ..."
  static_member_replaced  classic "... Replacing previously mapped member O with this groupInstanceId"
                       (instance, old_member: the new member id is not in the line); KIP-848 "Static
                       member with instance id I re-joins ... new member N to replace ... O" (old, new)
  session_timeout      classic "Member M in group G has failed, removing it from the group" (+ a
                       member_removed), KIP-848 "Member M fenced from the group because the member
                       session expired" (+ member_removed)
  rebalance_timeout    KIP-848 "... fenced ... because it failed to transition from epoch E within Tms"
  member_removed       KIP-848 "Member M fenced from the group because R", "Member M left the consumer
                       group" (reason "left the consumer group"); classic "Group G removed dynamic
                       members who haven't joined: [...]" (one per member)
  member_left          classic "Member M has left group ... explicit `LeaveGroup` ...; client reason: R"
                       (pending=True for a pending member)
  member_left_temporarily  "Static member M with instance id I temporarily left the consumer group"
  pending_member_expired   "Pending member M in group G has been removed after session timeout expiration"
  group_epoch          "Bumped group epoch to E ..." (body epoch). The line gives no reason: it is taken
                       from the group's member line just before (within WINDOW_MS) and worded like
                       kshim's ("member M subscription changed", "member M removed: R", "regular
                       expressions resolved: ...", "metadata changed"); body `cause` keeps that line
  target_assignment    "Computed a new target assignment for epoch E with 'A' assignor in Tms"
  group_converted      "Converted the [empty ]classic group to a consumer group" (to)
  group_deleted        "The following groups were deleted: ..." (4.x and 3.9), Scala "Group G
                       transitioned to Dead in generation N" (retention)

Log levels (Kafka's default config logs INFO for `kafka` and `org.apache.kafka`): all of the above
are INFO except these, which need DEBUG for the logger org.apache.kafka.coordinator.group.
GroupMetadataManager (new coordinator) or kafka.coordinator.group.GroupCoordinator (Scala):
"Pending dynamic member ... joins group" on 3.9 (the member_joined of a member's second JoinGroup;
INFO on 4.x) and "Group G removed members who haven't sent their sync requests" (member_removed);
on 4.x also the lines that name a KIP-848 bump's reason: "Member M updated its subscribed
topics/regex" (INFO on 3.9), "Computed new metadata hash" (3.9: "Computed new subscription
metadata", INFO), "Received updated regular expressions". Without them a join still names its
member (the INFO "joins the consumer group" line); a subscription change leaves the bump without
reason. With DEBUG on, 4.x logs the target assignment at DEBUG with the assignment appended (read
the same). Classic state transitions are not logged: there are no `state` events.
"""

from __future__ import annotations

import gzip
import heapq
import re
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path

from ..records import event_record
from .broker_log_lines import (CONTEXT, GROUP_PREFIX, HEADER, INT_FIELDS, KEYWORDS, LINES, LOGGER, PARTITION,
                               SCALA_PARTITION)

WINDOW_MS = 2000        # a member line explains a group epoch bump logged at most this much later
_LIST = re.compile(r"^\w*[\[(]|[\])]$")


def parse_broker_logs(paths: list[str | Path], tz: tzinfo | None = None) -> tuple[list[dict], dict]:
    """(records in time order, stats) of the group coordinator lines in `paths`."""
    tz = tz or timezone.utc
    files = []
    for p in paths:
        st = _FileStats(Path(p))
        files.append((st, _read(st, tz)))
    order = sorted(range(len(files)), key=lambda i: (files[i][0].first_ms is None, files[i][0].first_ms or 0,
                                                      files[i][0].path.name))
    hits = heapq.merge(*(files[i][1] for i in order), key=lambda h: h[0])
    build = _Builder()
    for hit in hits:
        build.add(*hit)
    stats = {"lines_read": sum(f.lines for f, _ in files), "lines_matched": build.matched,
             "events": len(build.records), "kinds": dict(sorted(build.kinds.items())), "tz": str(tz),
             "files": [files[i][0].summary() for i in order]}
    return build.records, stats


class _FileStats:
    def __init__(self, path: Path):
        self.path, self.lines, self.matched = path, 0, 0
        self.first_ms = self.last_ms = None

    def summary(self) -> dict:
        def iso(ms):
            return None if ms is None else datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(
                timespec="milliseconds")
        return {"file": self.path.name, "path": str(self.path), "lines": self.lines, "matched": self.matched,
                "first_wall_ms": self.first_ms, "last_wall_ms": self.last_ms,
                "first": iso(self.first_ms), "last": iso(self.last_ms)}


def _open(path: Path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if gz:
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


class _Clock:
    """Log stamps to epoch ms (cached per second: a log has many lines per second)."""

    def __init__(self, tz: tzinfo):
        self.tz, self.cache = tz, {}

    def ms(self, m: re.Match) -> int:
        key = (m["date"], m["time"], m["zone"])
        base = self.cache.get(key)
        if base is None:
            dt = datetime.fromisoformat(f"{m['date']}T{m['time']}")
            zone = m["zone"]
            if zone:
                if zone == "Z":
                    dt = dt.replace(tzinfo=timezone.utc)
                else:
                    hm = zone[1:].replace(":", "")
                    off = timedelta(hours=int(hm[:2]), minutes=int(hm[2:4] or 0))
                    dt = dt.replace(tzinfo=timezone(off if zone[0] == "+" else -off))
            else:
                dt = dt.replace(tzinfo=self.tz)
            base = int(dt.timestamp()) * 1000
            if len(self.cache) > 4096:
                self.cache.clear()
            self.cache[key] = base
        frac = m["frac"]
        return base + (int((frac + "00")[:3]) if frac else 0)


def _read(st: _FileStats, tz: tzinfo):
    """The file's matched lines as (wall_ms, kind, fields, meta), in file order."""
    clock, out = _Clock(tz), []
    first = last = None
    n = 0
    with _open(st.path) as f:
        for n, line in enumerate(f, 1):
            if not line or not (line[0] == "[" or line[0].isdigit()):
                continue                                # a continuation line (stack trace, wrapped text)
            if first is None:
                first = line
            last = line
            if not any(k in line for k in KEYWORDS):
                continue
            hit = _match(line, n, st.path.name, clock)
            if hit is not None:
                out.append(hit)
        st.lines = n
        for text, attr in ((first, "first_ms"), (last, "last_ms")):
            m = HEADER.match(text) if text else None
            if m:
                setattr(st, attr, clock.ms(m))
    st.matched = len(out)
    return out


def _match(line: str, n: int, fname: str, clock: _Clock):
    h = HEADER.match(line)
    if h is None:
        return None
    full = h["msg"].rstrip("\r\n")
    lm = LOGGER.match(full)
    msg, logger = (lm["msg"], lm["logger"]) if lm else (full, None)
    if logger is not None and "coordinator.group" not in logger:
        return None
    meta = {"file": fname, "line": n}
    rest = msg
    c = CONTEXT.match(rest)
    if c:
        meta["node"] = int(c["node"])
        p = PARTITION.search(c["rest"])
        if p:
            meta["partition"] = int(p[1])
        rest = rest[c.end():]
    group = None
    g = GROUP_PREFIX.match(rest)
    if g:
        group, rest = g["group"], rest[g.end():]
    for kind, rx in LINES:
        m = rx.match(rest)
        if m:
            fields = {k: v for k, v in m.groupdict().items() if v is not None}
            fields.setdefault("group", group)
            if fields["group"] is None and kind != "~deleted":
                return None
            if "partition" not in meta:
                p = SCALA_PARTITION.search(rest)
                if p:
                    meta["partition"] = int(p[1])
            meta.update(level=h["level"], logger=logger, text=msg)
            return clock.ms(h), kind, fields, meta
    return None


def _instance(v):
    if v is None or v in ("null", "None", "Optional.empty"):
        return None
    m = re.fullmatch(r"(?:Some\((.*)\)|Optional\[(.*)\])", v)
    return (m[1] if m[1] is not None else m[2]) if m else v


def _list(text: str) -> list[str]:
    text = _LIST.sub("", text.strip())
    return [x.strip() for x in text.split(",") if x.strip()]


class _Builder:
    """Matched lines (in time order) into records; remembers each group's last member lines for the
    reason of its next group epoch bump."""

    def __init__(self):
        self.records: list[dict] = []
        self.kinds: dict[str, int] = {}
        self.matched = 0
        self.why: dict[tuple, list] = {}        # (node, group) -> [(wall_ms, what, member, detail, text)]

    def emit(self, kind: str, group: str, wall: int, meta: dict, **body) -> None:
        rec = event_record({"event": kind, "group": group, **{k: v for k, v in body.items() if v is not None}})
        rec["wall_ms"] = wall
        rec["source"] = "broker_log"
        rec["broker_log"] = dict(meta)
        self.records.append(rec)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def remember(self, meta, group, wall, what, member=None, detail=None) -> None:
        self.why.setdefault((meta.get("node"), group), []).append((wall, what, member, detail, meta["text"]))

    def add(self, wall: int, kind: str, f: dict, meta: dict) -> None:
        self.matched += 1
        g = f.pop("group", None)
        for k in INT_FIELDS:
            if k in f:
                f[k] = int(f[k])
        if "instance" in f:
            f["instance"] = _instance(f["instance"])
        if not kind.startswith("~"):
            if kind == "group_epoch":
                f.update(self.reason(meta, g, wall))
            return self.emit(kind, g, wall, meta, **f)
        kind = kind[1:]
        if kind == "empty":
            self.emit("generation", g, wall, meta, generation=f["generation"], members=0)
        elif kind == "joined":
            self.emit("member_joined", g, wall, meta, member=f["member"], instance=f.get("instance"), new=True,
                      protocol=f.get("protocol"))
            if "protocol" in f:                     # KIP-848: the join bumps the group epoch
                self.remember(meta, g, wall, "subscription", f["member"])
        elif kind == "replaced":
            self.emit("static_member_replaced", g, wall, meta, instance=f["instance"], old=f["old"], new=f["new"],
                      protocol=f["protocol"])
            self.remember(meta, g, wall, "subscription", f["new"])
        elif kind == "session_timeout":
            self.emit("session_timeout", g, wall, meta, member=f["member"])
            self.emit("member_removed", g, wall, meta, member=f["member"],
                      reason="has failed, removing it from the group")
        elif kind == "fenced":
            mid, inst, reason = f["member"], f.get("instance"), f["reason"]
            if "session expired" in reason:
                self.emit("session_timeout", g, wall, meta, member=mid, instance=inst)
            elif reason.startswith("it failed to transition"):
                self.emit("rebalance_timeout", g, wall, meta, member=mid, instance=inst)
            self.emit("member_removed", g, wall, meta, member=mid, instance=inst, reason=reason)
            self.remember(meta, g, wall, "removed", mid, reason)
        elif kind == "pending_left":
            self.emit("member_left", g, wall, meta, member=f["member"], pending=True, reason=f.get("reason"))
        elif kind == "removed":
            for mid in _list(f["list"]):
                self.emit("member_removed", g, wall, meta, member=mid, reason=f["reason"])
        elif kind == "deleted":
            groups = _list(f["list"])
            for gid in groups:
                self.emit("group_deleted", gid, wall, meta,
                          offsets_removed=f["offsets_removed"] if len(groups) == 1 else None)
        elif kind == "why_subscription":
            self.remember(meta, g, wall, "subscription", f["member"])
        elif kind == "why_regex":
            self.remember(meta, g, wall, "regex", detail=", ".join(_list(f["list"])))
        elif kind == "why_metadata":
            self.remember(meta, g, wall, "metadata")

    def reason(self, meta: dict, group: str, wall: int) -> dict:
        """The reason of a group epoch bump, in kshim's words, from the group's member lines just before."""
        why = [w for w in self.why.pop((meta.get("node"), group), []) if wall - w[0] <= WINDOW_MS]
        removed = [w for w in why if w[1] == "removed"]
        if removed:
            reasons = {w[3] for w in removed}
            if len(removed) == 1:
                text = f"member {removed[0][2]} removed: {removed[0][3]}"
            else:
                text = f"{len(removed)} member(s) removed: {'; '.join(sorted(reasons))}"
            return {"reason": text, "cause": removed[-1][4]}
        for what in ("subscription", "regex", "metadata"):
            hit = [w for w in why if w[1] == what]
            if hit:
                w = hit[-1]
                text = {"subscription": f"member {w[2]} subscription changed",
                        "regex": f"regular expressions resolved: {w[3]}", "metadata": "metadata changed"}[what]
                return {"reason": text, "cause": w[4]}
        return {}
