"""The interactive report.html: one self-contained page (inline CSS and vanilla JS from viewer.css and
viewer.js, no network, works from file://) whose views are drawn from one embedded JSON blob
(`<script type="application/json" id="kshim-data">`, made by `viewer_data`):

  {"groups": [{"id", "name", "type" (classic|share|streams), "t0" (wall ms; every time below is ms after
               it), "span" (to the trace's last record, not the group's),
               "lanes": [{"label" (classic: the identity, instance id else member id; KIP-848, share,
                          streams: instance id, client id, member id where known), "title" (full ids),
                          "match" (text the member filter searches)}],
               "segs":  [[lane, from, to, solid_to, leader, text]]   membership: solid while the member
                        sends frames, pale from its last frame to the end the coordinator decided
               "marks": [[lane, t, kind, text, [frame keys]]]         joins, leaves, fencing, static bounces
               "rebs":  [{"t", "end", "label", "cause", "text"}]      rebalances (with partition impact)
               "causes": {cause_id: [{"t", "kind", "member", "text", "frame"}]}
               "parts": null | {"owners": [identity], "colours": [owner's colour], "legend": [{"label",
                        "title", "colour"}] (per owner), "unavailable": [[t, partitions unavailable from t]],
                        "max_unavailable", "stalled" (as unavailable: owned by a member that had stopped
                        sending frames), "max_stalled", "cut", "topics": [{"name", "unavailable" (as above), "rows":
                        [[partition, [[from, to, owner]], [[from, to, kind, cause_id, stalled_from]], has_bars]]}]}}],
   (gap kind: 0 a gap without owner, 1 before the first assignment, 2 owner unknown: the trace began
   after the group formed and never showed who owned it)
   "frames": {"group/conn:corr": [{"dir", "api", "v", "conn", "corr", "wall_ms", "errors", "body"}]},
   "notes": [...]}

`stalled_from`: the previous owner's last frame, when it came before the gap (a dead member keeps its
partitions until the coordinator ends its membership): drawn as a stalled stretch before the gap.

Frames embedded: the request and answer behind every cause and membership change (frames.py collects
them), in that order of priority, up to FRAMES_MAX_BYTES of JSON; a note says how many were left out.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from pathlib import Path

from .frames import frame_key

FRAMES_MAX_BYTES = 2_000_000
DETAIL_MAX = 60_000          # owner bars + gaps drawn per partition, in all (the strips count every gap)
HERE = Path(__file__).parent
IDENTITY = ("instance", "member")
NOT_ASSIGNED, OWNER_UNKNOWN = 1, 2         # gap kinds besides 0 (a gap)
RED_BAND = 65                # owner hues keep this far from red (hue 0), which means "no owner"


def owner_colour(i: int) -> str:
    """The i-th owner's colour: golden-angle hues from RED_BAND to 360 - RED_BAND, never the red of a
    gap nor the orange of a stall."""
    hue = RED_BAND + (i * 137.508) % (360 - 2 * RED_BAND)
    return f"hsl({hue:.0f},55%,{52 if i % 2 else 42}%)"


def _e(x) -> str:
    return html.escape("" if x is None else str(x))


def short_id(text, width: int = 26) -> str:
    """A member id cut in the middle ("consumer-g-1-3f2a…9c1d"): the client prefix and the tail stay."""
    s = "" if text is None else str(text)
    return s if len(s) <= width else s[:width - 7] + "…" + s[-6:]


def _ident(r: dict) -> str:
    return r.get("instance") or r.get("member") or "?"


def identity_label(instance, client_ids, members) -> str:
    """A lane's or owner's label: its group.instance.id and client id where known, and its member id
    (cut in the middle) when it had one; just the member id when that is all there is."""
    members = sorted(m for m in members if m and m != instance)
    client = sorted(c for c in client_ids if c)
    parts = [instance] if instance else []
    parts += client[:1]
    if len(members) == 1:       # a classic member id starts with its client id: then its tail says which
        m = members[0]
        parts.append("…" + m[-8:] if client and m.startswith(client[0]) and len(m) > len(client[0]) + 8
                     else short_id(m, 18 if parts else 26))
    elif members and not instance:
        parts.append(f"{len(members)} member ids")
    return " · ".join(parts) or "?"


def assignment_text(parts) -> str:
    """["t-0", "t-1", "t-2", "t-7", "u-1"] -> "t 0-2,7; u 1" (partitions per topic as ranges)."""
    by_topic: dict[str, list[int]] = {}
    other = []
    for name in parts or ():
        topic, _, p = str(name).rpartition("-")
        if topic and p.isdigit():
            by_topic.setdefault(topic, []).append(int(p))
        else:
            other.append(str(name))
    out = []
    for topic, ps in by_topic.items():
        ps, runs = sorted(set(ps)), []
        for p in ps:
            if runs and p == runs[-1][1] + 1:
                runs[-1][1] = p
            else:
                runs.append([p, p])
        out.append(f"{topic} " + ",".join(f"{a}-{b}" if b > a else str(a) for a, b in runs))
    return "; ".join(out + other) or "no partitions"


class GroupData:
    """One group's part of the blob."""

    def __init__(self, idx: int, name: str, kind: str, times: list[int], trace_end_wall_ms: int | None = None):
        """`trace_end_wall_ms`: the trace's last record; the time axis runs to it (a group quiet since its
        last rebalance is still watched until then)."""
        times = times + ([trace_end_wall_ms] if trace_end_wall_ms is not None and times else [])
        self.t0 = min(times) if times else 0
        end = max(times) if times else 0
        self.d = {"id": idx, "name": name, "type": kind, "t0": self.t0, "span": max(end - self.t0, 1),
                  "lanes": [], "segs": [], "marks": [], "rebs": [], "causes": {}, "parts": None}
        self.lane_of: dict[str, int] = {}
        # label lanes by instance id, client id and member id: members whose ids say nothing of the client
        # (KIP-848, share and streams members: random ids); a classic lane keeps its identity as label
        # (instance id, else member id, which starts with the client id)
        self.label_by_ids = kind != "classic"

    def t(self, ms) -> int | None:
        return None if ms is None else int(ms - self.t0)

    def lane(self, ident: str, member=None, client_id=None, instance=None) -> int:
        if ident not in self.lane_of:
            self.lane_of[ident] = len(self.d["lanes"])
            self.d["lanes"].append({"label": short_id(ident), "title": ident, "match": ident, "_all": {ident},
                                    "_members": set(), "_clients": set(), "_instance": None})
        lane = self.d["lanes"][self.lane_of[ident]]
        lane["_all"] |= {x for x in (member, client_id, instance) if x}
        lane["_members"] |= {member} if member else set()
        lane["_clients"] |= {client_id} if client_id else set()
        lane["_instance"] = lane["_instance"] or instance
        return self.lane_of[ident]

    def finish(self) -> dict:
        for lane in self.d["lanes"]:
            ids = sorted(lane.pop("_all"))
            who = (lane.pop("_instance"), lane.pop("_clients"), lane.pop("_members"))
            if self.label_by_ids:
                lane["label"] = identity_label(*who)
            lane["title"] = " / ".join(ids)
            lane["match"] = " ".join(ids).lower()
        return self.d


def _classic_group(idx: int, name: str, t: dict, frame_of: dict, trace_end: int | None = None) -> GroupData:
    gm = [m for m in t.get("generation_members") or () if m["group"] == name]
    changes = [c for c in t.get("changes") or () if c["group"] == name and c.get("wall_ms") is not None]
    owners = [o for o in t.get("partition_owners") or () if o["group"] == name]
    gaps = [g for g in t.get("partition_gaps") or () if g["group"] == name]
    impact = [r for r in t.get("rebalance_impact") or () if r["group"] == name]
    rounds = [r for r in t.get("rebalances") or () if r["group"] == name]
    causes = [c for c in t.get("causes") or () if c["group"] == name]
    times = [x for m in gm for x in (m["from_wall_ms"], m["to_wall_ms"]) if x is not None]
    times += [c["wall_ms"] for c in changes] + [x for o in owners for x in (o["from_wall_ms"], o["to_wall_ms"]) if x]
    times += [r.get("start_wall_ms") for r in rounds + impact if r.get("start_wall_ms") is not None]
    gd = GroupData(idx, name, "classic", times, trace_end)
    end = gd.t0 + gd.d["span"]
    client = {c["member"]: c["client_id"] for x in (owners, changes) for c in x
              if c.get("member") and c.get("client_id")}
    last_frame = {m["member"]: m.get("last_wall_ms") for m in t.get("members") or () if m["group"] == name}
    seen = {o["member"]: o["last_seen_wall_ms"] for o in owners if o.get("last_seen_wall_ms") is not None}
    for m in sorted(gm, key=lambda m: m["from_wall_ms"]):
        lane = gd.lane(_ident(m), m["member"], m.get("client_id") or client.get(m["member"]), m.get("instance"))
        to = m["to_wall_ms"] if m["to_wall_ms"] is not None else end
        last = seen.get(m["member"])
        if last is None and last_frame.get(m["member"]) is not None and to - last_frame[m["member"]] > 5000:
            last = last_frame[m["member"]]       # silent for longer than a heartbeat interval or two
        solid = min(max(last, m["from_wall_ms"]), to) if last is not None else to
        gd.d["segs"].append([lane, gd.t(m["from_wall_ms"]), gd.t(to), gd.t(solid), bool(m.get("leader")),
                             f"{short_id(m['member'], 22)} generation {m.get('generation')}: "
                             f"{assignment_text(m.get('assignment'))}"])
    if not gm:        # a KIP-848 group: a bar per (member, epoch) from the partitions it owned in that epoch
        gd.label_by_ids = True
        spans: dict[tuple, list] = {}
        for o in owners:
            s = spans.setdefault((_ident(o), o["member"], o.get("epoch")), [o["from_wall_ms"], o["from_wall_ms"], o])
            s[1] = max(s[1], o["to_wall_ms"] if o["to_wall_ms"] is not None else end)
        for (ident, member, epoch), (a, b, o) in sorted(spans.items(), key=lambda kv: kv[1][0]):
            lane = gd.lane(ident, member, o.get("client_id"), o.get("instance"))
            gd.d["segs"].append([lane, gd.t(a), gd.t(b), gd.t(b), False, f"{member} epoch {epoch}"])
    for c in changes:
        lane = gd.lane(_ident(c), c.get("member"), c.get("client_id") or client.get(c.get("member")),
                       c.get("instance"))
        key = frame_of.get((name, c.get("ts_ns")))
        gd.d["marks"].append([lane, gd.t(c["wall_ms"]), c["kind"],
                              " ".join(str(x) for x in (short_id(c.get("member"), 22), c.get("reason"), c.get("detail")) if x),
                              [key] if key else []])
    for c in sorted(causes, key=lambda c: (str(c["cause_id"]), c.get("seq") or 0)):
        frame = frame_key(name, c["conn"], c["corr"]) if c.get("conn") is not None and c.get("corr") is not None else None
        text = " ".join(str(x) for x in (c.get("reason"), c.get("detail")) if x)
        if c.get("source") in ("inferred", "broker_log"):
            text = f"[{c['source'].replace('_', ' ')}] {text}"
        gd.d["causes"].setdefault(str(c["cause_id"]), []).append(
            {"t": gd.t(c.get("wall_ms") or gd.t0), "kind": c["kind"], "member": c.get("instance") or c.get("member"),
             "text": text, "frame": frame})
    by_gen = {r.get("generation"): r for r in impact}
    for r in rounds or impact:
        i = by_gen.get(r.get("generation"), {})
        start = r.get("start_wall_ms") or r.get("generation_wall_ms") or i.get("start_wall_ms")
        if start is None:
            continue
        stop = i.get("end_wall_ms") or r.get("last_sync_wall_ms")
        text = f"{r.get('reason') or i.get('cause') or ''}"
        if i:
            text += f" | {i.get('protocol')}: " + impact_text(i)
        gen = r.get("generation")
        gd.d["rebs"].append({"t": gd.t(start), "end": gd.t(stop), "label": f"g{gen}" if gen is not None else "open",
                             "cause": i.get("cause_id"), "text": text})
    if owners:
        gd.d["parts"] = partitions(gd, owners, gaps, end)
    return gd


def impact_text(i: dict) -> str:
    """A rebalance's partition impact in words; unknown where the trace did not show the owners before it."""
    if i.get("partitions_owner_unknown"):
        text = (f"partitions unavailable: unknown (the owner before it of {i['partitions_owner_unknown']} "
                f"partition(s) is not in the trace)")
    else:
        text = (f"{i.get('partitions_unavailable') or 0} partition(s) unavailable, max gap "
                f"{i.get('max_gap_ms') if i.get('max_gap_ms') is not None else '-'} ms")
    return text + f"; slowest rejoin {i.get('slowest_rejoin_member')} {i.get('slowest_rejoin_ms')} ms"


def steps(intervals) -> list[list[int]]:
    """How many intervals are open, as change points [t, n] (n from t on): the heat strips' data, exact
    at any zoom and small however many gaps there are."""
    delta: dict[int, int] = {}
    for a, b in intervals:
        delta[a] = delta.get(a, 0) + 1
        delta[b] = delta.get(b, 0) - 1
    out, n = [], 0
    for t in sorted(delta):
        if delta[t]:
            n += delta[t]
            out.append([t, n])
    return out


def partitions(gd: GroupData, owners: list[dict], gaps: list[dict], end: int, detail_max: int = DETAIL_MAX) -> dict:
    """Rows per topic-partition: [partition, [[from, to, owner]], [[from, to, initial, cause, stalled_from]],
    has_detail]; past `detail_max` bars and gaps the remaining partitions keep their row without bars (the
    strips still count them) and a note says so."""
    names: dict[str, int] = {}
    who: dict[str, tuple] = {}           # identity -> (instance, client ids, member ids) for the legend
    rows: dict[tuple, list] = {}
    for o in sorted(owners, key=lambda o: o["from_wall_ms"]):
        k = names.setdefault(_ident(o), len(names))
        inst, clients, members = who.setdefault(_ident(o), (o.get("instance"), set(), set()))
        clients.add(o.get("client_id"))
        members.add(o.get("member"))
        r = rows.setdefault((o["topic"], o["partition"]), [o["partition"], [], [], 1])
        to = o["to_wall_ms"] if o["to_wall_ms"] is not None else end
        r[1].append([gd.t(o["from_wall_ms"]), gd.t(to), k])
    unavailable, stalled = [], []
    by_topic: dict[str, list] = {}
    for g in gaps:
        r = rows.setdefault((g["topic"], g["partition"]), [g["partition"], [], [], 1])
        if g.get("initial"):      # from the partition's first appearance: the trace start
            a, b = gd.t0, g["from_wall_ms"]
            kind = OWNER_UNKNOWN if g.get("previous_owner_unknown") else NOT_ASSIGNED
        else:
            a, b = g["from_wall_ms"], g["to_wall_ms"] if g["to_wall_ms"] is not None else end
            kind = 0
        r[2].append([gd.t(a), gd.t(b), kind, g.get("cause_id"), gd.t(g.get("stalled_from_wall_ms"))])
        if not g.get("initial"):
            unavailable.append((gd.t(a), gd.t(b)))
            if g.get("stalled_from_wall_ms") is not None and g["stalled_from_wall_ms"] < a:
                stalled.append((gd.t(g["stalled_from_wall_ms"]), gd.t(a)))
            by_topic.setdefault(g["topic"], []).append((gd.t(a), gd.t(b)))
    topics, budget, cut = [], detail_max, 0
    for topic in sorted({k[0] for k in rows}):
        mine = [rows[k] for k in sorted(k for k in rows if k[0] == topic)]
        for r in mine:
            budget -= len(r[1]) + len(r[2])
            if budget < 0:
                r[1:] = [[], [], 0]
                cut += 1
        topics.append({"name": topic, "unavailable": steps(by_topic.get(topic, [])), "rows": mine})
    heat, still = steps(unavailable), steps(stalled)
    legend = [{"label": identity_label(*who[ident]), "title": " / ".join(sorted(x for x in (ident, *who[ident][1],
                                                                                         *who[ident][2]) if x)),
               "colour": owner_colour(k)} for ident, k in names.items()]
    return {"owners": list(names), "colours": [owner_colour(k) for k in range(len(names))], "legend": legend,
            "unavailable": heat, "max_unavailable": max((n for _, n in heat), default=0),
            "stalled": still, "max_stalled": max((n for _, n in still), default=0), "topics": topics, "cut": cut}


def _heartbeat_group(idx: int, name: str, kind: str, t: dict, trace_end: int | None = None) -> GroupData:
    spans = [s for s in t.get(f"{kind}_epochs") or () if s["group"] == name]
    tl = [r for r in t.get(f"{kind}_timeline") or () if r["group"] == name and r.get("wall_ms") is not None]
    times = [x for s in spans for x in (s["from_wall_ms"], s["to_wall_ms"]) if x is not None]
    gd = GroupData(idx, name, kind, times + [r["wall_ms"] for r in tl], trace_end)
    client = {m["member"]: m.get("client_id") for m in t.get(f"{kind}_members") or () if m["group"] == name}
    end = gd.t0 + gd.d["span"]
    for s in sorted(spans, key=lambda s: s["from_wall_ms"]):
        lane = gd.lane(s["member"], s["member"], client.get(s["member"]), s.get("instance"))
        to = s["to_wall_ms"] if s["to_wall_ms"] is not None else end
        what = s.get("assignment") or [x for k in ("active_tasks", "standby_tasks", "warmup_tasks") for x in s.get(k) or ()]
        gd.d["segs"].append([lane, gd.t(s["from_wall_ms"]), gd.t(to), gd.t(to), False,
                             f"{s['member']} epoch {s.get('epoch')}: {', '.join(what or []) or 'nothing assigned'}"])
    for r in tl:
        lane = gd.lane(r["member"], r["member"], client.get(r["member"]), r.get("instance"))
        gd.d["marks"].append([lane, gd.t(r["wall_ms"]), r["kind"], f"epoch {r.get('epoch')} {r.get('detail') or ''}", []])
    return gd


def cap_frames(frames: dict, order: list[str], max_bytes: int = FRAMES_MAX_BYTES) -> tuple[dict, int]:
    """The frames of `order`'s keys (then any others) up to `max_bytes` of JSON; (kept, left out)."""
    kept, size, dropped = {}, 0, 0
    for key in list(dict.fromkeys(order + sorted(frames))):
        if key not in frames or key in kept:
            continue
        n = len(json.dumps(frames[key], default=str))
        if size + n > max_bytes:
            dropped += 1
            continue
        kept[key] = frames[key]
        size += n
    return kept, dropped


def viewer_data(tables: dict, classic_groups: list[str], hb_groups: dict[str, list[str]],
                linked: dict | None = None, max_frame_bytes: int = FRAMES_MAX_BYTES,
                trace_end_wall_ms: int | None = None) -> dict:
    """The blob (module docstring). `linked`: frames.py's {"frames": {key: [...]}, "by_ts": {(group, ts_ns): key}};
    `trace_end_wall_ms`: the trace's last record (every group's axis runs to it)."""
    linked = linked or {"frames": {}, "by_ts": {}}
    groups = [_classic_group(i, name, tables, linked["by_ts"], trace_end_wall_ms).finish()
              for i, name in enumerate(classic_groups)]
    for kind, names in hb_groups.items():
        groups += [_heartbeat_group(len(groups), name, kind, tables, trace_end_wall_ms).finish() for name in names]
    order = [c["frame"] for g in groups for chain in g["causes"].values() for c in chain if c["frame"]]
    order += [k for g in groups for m in g["marks"] for k in m[4]]
    frames, dropped = cap_frames(linked["frames"], order, max_frame_bytes)
    notes = [f"group {g['name']}: bars of {g['parts']['cut']} partition(s) not drawn (over {DETAIL_MAX} bars and gaps "
             f"in the page); the strips count all of them, partition_gaps.parquet has them"
             for g in groups if g["parts"] and g["parts"]["cut"]]
    if dropped:
        notes.append(f"{dropped} request/answer pair(s) not embedded (over {max_frame_bytes // 1000} kB of frames); "
                     f"`kshim trace show DIR --group G` prints them")
    return {"groups": groups, "frames": frames, "notes": notes}


def blob(data: dict) -> str:
    """The data as JSON text safe inside a <script> element."""
    return json.dumps(data, separators=(",", ":"), default=str).replace("</", "<\\/")


def page(head: str, body: list[str], data: dict) -> str:
    css = (HERE / "viewer.css").read_text()
    js = (HERE / "viewer.js").read_text()
    notes = "".join(f"<p class='note'>{_e(n)}</p>" for n in data["notes"])
    return "\n".join([
        f"<!doctype html><html><head><meta charset='utf-8'><title>kshim trace analysis</title><style>{css}</style>"
        "</head><body>", head,
        "<div class='filter'>member filter <input id='member-filter' size='40' "
        "placeholder='member id, group.instance.id or client id'> <span id='viewer-status'></span></div>", notes,
        *body, "<div id='tip'></div>",
        f"<script type='application/json' id='kshim-data'>{blob(data)}</script>", f"<script>{js}</script>",
        "</body></html>"])


def clock(ms) -> str:
    if ms is None:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def table(rows: list[dict], cols: list[str], limit: int = 500) -> str:
    """A table that fits: long cells are cut with the full text on hover; a row carries the member ids
    it names (`data-m`) for the member filter; wider than the page: it scrolls sideways."""
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = []
    for r in rows[:limit]:
        cells = []
        for c in cols:
            v = r.get(c)
            if isinstance(v, list):
                v = "; ".join(map(str, v))
            if c.endswith("wall_ms"):
                v = clock(v)
            cls = ' class="n"' if isinstance(v, (int, float)) else (f' class="{_e(v)}"' if c == "severity" else "")
            text = "" if v is None else str(v)
            shown = short_id(text) if c in ("member", "instance", "leader", "subject") or c.endswith("_member") else text
            title = f' title="{_e(text)}"' if shown != text or len(text) > 40 else ""
            cells.append(f"<td{cls}{title}>{_e(shown)}</td>")
        ids = " ".join(str(r.get(k)) for k in ("member", "instance", "client_id", "subject") if r.get(k))
        body.append((f'<tr data-m="{_e(ids.lower())}">' if ids else "<tr>") + "".join(cells) + "</tr>")
    more = f"<p>{len(rows) - limit} more rows in the Parquet table.</p>" if len(rows) > limit else ""
    return f"<div class='tw'><table><tr>{head}</tr>{''.join(body)}</table></div>{more}"
