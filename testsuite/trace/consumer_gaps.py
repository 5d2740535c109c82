"""Per-partition unavailability as the consumers' own logs tell it (no trace involved).

Input: one dict per consumer incarnation (scenario_members.ScenarioMembers.write_logs): its callback
lines (`partitions_assigned` / `_revoked` / `_lost`, each with System.currentTimeMillis(), the member id
and generation from consumer.groupMetadata()), its Kafka client log, and the scenario's kill time if it
was SIGKILLed. An incarnation owns a partition from the `partitions_assigned` line naming it to the
first of:
- `partitions_revoked` naming it: a revocation the assignment asked for (cooperative), or `closed`
  when the scenario had asked the process to stop (a static member's close() revokes everything and
  sends no LeaveGroup: ConsumerCoordinator.onLeavePrepare);
- a poll timeout: the client log line of the heartbeat thread sending its LeaveGroup "due to consumer
  poll timeout has expired" (AbstractCoordinator.maybeLeaveGroup) — the member gave the partitions
  up there, although the application hears `partitions_lost` only when its blocked poll loop returns;
- `partitions_lost` (the generation was reset by an error);
- its SIGKILL (the scenario's time just before the signal): the process ends, no callback; the group
  learns of it only at the session timeout, so this end is the application's, not the group's.
A gap is the time between one owner's end and the next owner's `partitions_assigned`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

POLL_TIMEOUT_LEAVE = re.compile(r"^(\d+) \w+ .*sending LeaveGroup request .*due to consumer poll timeout")


@dataclass
class Ownership:
    topic: str
    partition: int
    owner: str              # incarnation name (= client.id)
    member: str             # member id when assigned
    generation: int
    start: int              # wall ms
    end: int | None = None
    end_kind: str | None = None   # revoked, closed, poll_timeout, lost, killed; None: still owned at the end


@dataclass
class Gap:
    topic: str
    partition: int
    start: int | None       # previous owner's end (None: the partition's first owner)
    end: int                # next owner's partitions_assigned
    previous: Ownership | None
    next: Ownership

    @property
    def duration(self) -> int | None:
        return None if self.start is None else self.end - self.start


def poll_timeout_leaves(client_log: str | Path) -> list[int]:
    """Wall ms of each LeaveGroup the client's heartbeat thread sent for a poll timeout."""
    try:
        text = Path(client_log).read_text(errors="replace")
    except FileNotFoundError:
        return []
    return [int(m.group(1)) for m in map(POLL_TIMEOUT_LEAVE.match, text.splitlines()) if m]


def ownerships(incarnation: dict) -> list[Ownership]:
    leaves = poll_timeout_leaves(incarnation["client_log"]) if incarnation.get("client_log") else []
    held: dict[tuple[str, int], Ownership] = {}
    done: list[Ownership] = []

    def end(o: Ownership, at: int, kind: str) -> None:
        o.end, o.end_kind = at, kind
        done.append(o)

    for e in incarnation["events"]:
        name, at = e.get("name"), e.get("timestamp")
        for p in e.get("partitions", []):
            tp = (p["topic"], p["partition"])
            if name == "partitions_assigned":
                held[tp] = Ownership(tp[0], tp[1], incarnation["name"], e.get("member", ""),
                                     e.get("generation", -1), at)
            elif name == "partitions_revoked" and tp in held:
                stopping = incarnation.get("stopped_at") is not None and at >= incarnation["stopped_at"]
                end(held.pop(tp), at, "closed" if stopping else "revoked")
            elif name == "partitions_lost" and tp in held:
                o = held.pop(tp)
                leave = [t for t in leaves if o.start <= t <= at]
                end(o, leave[0], "poll_timeout") if leave else end(o, at, "lost")
    for o in held.values():
        if incarnation.get("killed_at"):
            end(o, incarnation["killed_at"], "killed")
        else:
            done.append(o)
    return done


def log_gaps(incarnations: list[dict]) -> list[Gap]:
    """Every partition's gaps between consecutive owners (by start time), the first owner's too
    (start None). A previous owner still holding the partition (no end) or ending after the next
    owner started gives a gap of negative or unknown length: two owners at once, shown as such."""
    by_tp: dict[tuple[str, int], list[Ownership]] = {}
    for inc in incarnations:
        for o in ownerships(inc):
            by_tp.setdefault((o.topic, o.partition), []).append(o)
    gaps = []
    for (topic, partition), owns in sorted(by_tp.items()):
        owns.sort(key=lambda o: o.start)
        gaps.append(Gap(topic, partition, None, owns[0].start, None, owns[0]))
        for prev, nxt in zip(owns, owns[1:]):
            gaps.append(Gap(topic, partition, prev.end, nxt.start, prev, nxt))
    return gaps
