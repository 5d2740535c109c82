"""Seeded random scenarios: 2-4 members (classic or consumer protocol, some static) on one or two
group ids, plus an admin connection, sending well-formed but often unlucky group requests at random
versions. A scenario is plain JSON (`Scenario.to_json`), so a failing one can be saved, shrunk and
replayed; everything that depends on a target's own answers is a symbol resolved per target
(build.resolve, driver.Side.lookup).

Timing is kept coarse so that both targets see the same order of events: timeouts are either long
(30 s: never due within a scenario) or 6 s, and the only way to let them fire is a `sleep` step of
7 s; short `sleep`s (60 ms) leave room for work the broker does just after a heartbeat (regex
resolution, assignment)."""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field

from kcodec.protocol import ApiKey

from .groups_gen import RANGES as GROUPS_RANGES, GroupsGen
from .txn_gen import RANGES as TXN_RANGES, TxnGen

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR
JOIN, HEARTBEAT, LEAVE, SYNC = ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS
TXN_OFFSET_COMMIT, OFFSET_DELETE = ApiKey.TXN_OFFSET_COMMIT, ApiKey.OFFSET_DELETE
CG_HEARTBEAT, CG_DESCRIBE = ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE

# versions asked for when the targets do not say (the intersection of both targets' ApiVersions
# replaces this at run time: driver.negotiate)
DEFAULT_RANGES = {
    JOIN: (0, 9), SYNC: (0, 5), HEARTBEAT: (0, 4), LEAVE: (0, 5), OFFSET_COMMIT: (2, 10),
    OFFSET_FETCH: (1, 10), FIND_COORDINATOR: (0, 6), DESCRIBE_GROUPS: (0, 6), LIST_GROUPS: (0, 5),
    DELETE_GROUPS: (0, 2), TXN_OFFSET_COMMIT: (0, 3), OFFSET_DELETE: (0, 0), CG_HEARTBEAT: (0, 1),
    CG_DESCRIBE: (0, 1), **GROUPS_RANGES, **TXN_RANGES,
}
TOPICS = {"t1": 1, "t2": 3}          # created by the driver; "tx" is never created
LONG_SLEEP_MS, SHORT_SLEEP_MS, REGEX_SLEEP_MS = 7000, 60, 200
TIMEOUTS = (30000, 30000, 30000, 6000)
STATES = ["Empty", "Stable", "PreparingRebalance", "CompletingRebalance", "Dead", "Assigning",
          "Reconciling", "stable", "Bogus"]


@dataclass
class Scenario:
    seed: int
    members: dict = field(default_factory=dict)   # name -> {"kind", "group", "instance", "versions"}
    # kind: classic, consumer, share or streams (groups_gen)
    steps: list = field(default_factory=list)     # {"conn", "api", "v", "body", "pipe"} or {"sleep": ms}

    def to_json(self) -> dict:
        return {"seed": self.seed, "members": self.members, "steps": self.steps}

    @classmethod
    def from_json(cls, d: dict) -> "Scenario":
        return cls(d["seed"], d["members"], d["steps"])


class _Gen:
    def __init__(self, seed: int, ranges: dict):
        self.r = random.Random(seed)
        self.extra = random.Random(f"{seed}/extra")
        # identity changes on their own stream too (the other draws stay as they were): a member that
        # rejoins static after dynamic or the reverse, or under another instance id, and consumer members
        # taking a classic member's id (the sequences of GroupMetadataManager's static-member paths)
        self.ident = random.Random(f"{seed}/identity")
        self.inst: dict[str, str | None] = {}
        self.ranges = ranges
        self.sc = Scenario(seed)
        self.joined: set[str] = set()            # members that (probably) joined: mostly act as such

    def version(self, api_key: int) -> int:
        lo, hi = self.ranges[api_key]
        return self.r.randint(lo, hi)

    def pick(self, *options):
        return self.r.choice(options)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def step(self, conn: str, api_key: int, body: dict, v: int | None = None) -> None:
        m = self.sc.members.get(conn)
        if v is None:
            v = m["versions"][str(api_key)] if m and str(api_key) in m["versions"] else self.version(api_key)
        step = {"conn": conn, "api": int(api_key), "v": v, "body": body, "pipe": self.chance(0.5)}
        if self.extra.random() < 0.03:           # (own stream: the other draws stay as they were)
            step["trailing"] = self.extra.choice(("00", "0000ffff", "deadbeef00"))   # bytes after the body
        self.sc.steps.append(step)

    def instance(self, name: str, m: dict, joining: bool) -> str | None:
        """The member's instance id now; a join may change it (to none, or to one of two ids)."""
        cur = self.inst.get(name, m["instance"])
        if joining and self.ident.random() < 0.2:
            cur = None if cur else self.ident.choice(("i1", f"i{name[1:]}x"))
        self.inst[name] = cur
        return cur

    # ------------------------------------------------------------------ scenario
    def scenario(self) -> Scenario:
        r = self.r
        n = r.randint(2, 4)
        mixed = self.chance(0.35)                 # classic and consumer members on one group id
        consumer_share = self.pick(0.0, 0.5, 1.0) if mixed else 0.0
        for i in range(1, n + 1):
            kind = "consumer" if r.random() < consumer_share else "classic"
            if not mixed and self.chance(0.3):
                kind = "consumer"
            group = "g1" if mixed or self.chance(0.8) else "g2"
            inst = f"i{i}" if self.chance(0.4) else None
            if inst and self.chance(0.1) and i > 1:
                inst = "i1"                       # a twin on another member's instance id
            self.sc.members[f"m{i}"] = {
                "kind": kind, "group": group, "instance": inst,
                "versions": {str(int(k)): self.version(k) for k in (JOIN, SYNC, HEARTBEAT, LEAVE, OFFSET_COMMIT,
                                                                   OFFSET_FETCH, CG_HEARTBEAT)},
                "timeout": self.pick(*TIMEOUTS), "rebalance": self.pick(*TIMEOUTS),
                "protocols": self.pick(["range"], ["range"], ["roundrobin", "range"], ["sticky"]),
                "ptype": self.pick("consumer", "consumer", "consumer", "connect"),
                "topics": self.pick(["t1"], ["t2"], ["t1", "t2"]),
            }
        for _ in range(r.randint(12, 32)):
            roll = r.random()
            if roll < 0.07:
                self.sc.steps.append({"sleep": LONG_SLEEP_MS if self.chance(0.25) else SHORT_SLEEP_MS})
            elif roll < 0.25:
                self.admin()
            else:
                name = self.pick(*self.sc.members)
                m = self.sc.members[name]
                (self.classic if m["kind"] == "classic" else self.consumer)(name, m)
        GroupsGen(self).add()                     # share/streams members: their own random stream
        TxnGen(self).add()                        # real transactions: theirs
        return self.sc

    # ------------------------------------------------------------------ classic members
    def classic(self, name: str, m: dict) -> None:
        g = f"$group:{m['group']}"
        mid = self.pick(f"$mid:{name}", f"$mid:{name}", f"$mid:{name}", "", "unknown-member")
        gen = self.pick(f"$gen:{name}", f"$gen:{name}", f"$gen:{name}", f"$gen+1:{name}", -1)
        what = self.r.choices(["join", "sync", "heartbeat", "leave", "commit", "fetch"],
                              [5, 3, 3, 1, 2, 1])[0]
        if name not in self.joined and self.chance(0.75):
            what = "join"
        inst = self.instance(name, m, what == "join")
        self.joined.add(name)
        if what == "leave":
            self.joined.discard(name)
        if what == "join":
            timeout = m["timeout"] if self.chance(0.9) else self.pick(500, 1800001)
            protocols = [{"name": p, "metadata": f"$subscription:{','.join(m['topics'])}"} for p in m["protocols"]]
            if self.chance(0.1):
                protocols = [{"name": "other", "metadata": ""}]
            self.step(name, JOIN, {"groupId": g, "sessionTimeoutMs": timeout,
                                   "rebalanceTimeoutMs": m["rebalance"] if self.chance(0.9) else -1,
                                   "memberId": mid, "groupInstanceId": inst,
                                   "protocolType": m["ptype"], "protocols": protocols,
                                   "reason": self.pick(None, "wire test")})
        elif what == "sync":
            self.step(name, SYNC, {"groupId": g, "generationId": gen, "memberId": mid,
                                   "groupInstanceId": inst,
                                   "protocolType": self.pick(m["ptype"], m["ptype"], None, "other"),
                                   "protocolName": self.pick(f"$protocol:{name}", f"$protocol:{name}", None, "nope"),
                                   "assignments": f"$assignments:{name}"})
        elif what == "heartbeat":
            self.step(name, HEARTBEAT, {"groupId": g, "generationId": gen, "memberId": mid,
                                        "groupInstanceId": inst})
        elif what == "leave":
            members = [{"memberId": mid, "groupInstanceId": inst, "reason": self.pick(None, "bye")}]
            if self.chance(0.3):
                other = self.pick(*self.sc.members)
                members.append({"memberId": self.pick(f"$mid:{other}", "unknown-member"),
                                "groupInstanceId": self.sc.members[other]["instance"]})
            self.step(name, LEAVE, {"groupId": g, "memberId": mid, "members": members})
        elif what == "commit":
            self.commit(name, g, gen, mid, inst, m)
        else:
            self.fetch(name, [m["group"]], f"$epoch:{name}" if self.chance(0.3) else -1, mid)

    def commit(self, name: str, g: str, gen, mid, inst, m: dict) -> None:
        topics = [self.offsets(t) for t in self.pick(m["topics"], m["topics"], ["t1", "tx"], ["t2"])]
        self.step(name, OFFSET_COMMIT, {"groupId": g, "generationIdOrMemberEpoch": gen, "memberId": mid,
                                        "groupInstanceId": inst, "retentionTimeMs": -1, "topics": topics})

    def offsets(self, t: str) -> dict:
        parts = sorted(self.r.sample(range(TOPICS.get(t, 2) + (1 if self.chance(0.1) else 0)),
                                     self.r.randint(1, TOPICS.get(t, 2))))
        return {"name": f"$topic:{t}", "topicId": f"$topicid:{t}",
                "partitions": [{"partitionIndex": p, "committedOffset": self.r.randint(0, 50),
                                "committedLeaderEpoch": self.pick(-1, 0),
                                "committedMetadata": self.metadata()} for p in parts]}

    def metadata(self):
        roll = self.r.random()
        if roll < 0.05:
            return "x" * self.pick(4096, 4097)
        if roll < 0.1:
            return "\U0001F600" * self.pick(1024, 2048, 2049)   # 2 UTF-16 units each
        if roll < 0.15:
            return "é" * self.pick(4096, 4097)
        return self.pick(None, "", "meta")

    def fetch(self, conn: str, groups: list[str], epoch, mid, v: int | None = None) -> None:
        topics = self.pick(None, [{"name": "$topic:t1", "topicId": "$topicid:t1", "partitionIndexes": [0]}],
                           [{"name": "$topic:t2", "topicId": "$topicid:t2", "partitionIndexes": [0, 1, 2]},
                            {"name": "$topic:tx", "topicId": "$topicid:tx", "partitionIndexes": [0]}])
        body = {"groupId": f"$group:{groups[0]}", "topics": topics if topics is not None else None,
                "requireStable": self.chance(0.5),
                "groups": [{"groupId": f"$group:{g}", "memberId": mid, "memberEpoch": epoch,
                            "topics": topics} for g in groups]}
        self.step(conn, OFFSET_FETCH, body, v)

    # ------------------------------------------------------------------ consumer-protocol members
    def consumer(self, name: str, m: dict) -> None:
        g = f"$group:{m['group']}"
        what = self.r.choices(["join", "beat", "beat_change", "bad_epoch", "leave", "commit", "fetch"],
                              [3, 6, 1, 1, 1, 2, 1])[0]
        if name not in self.joined and self.chance(0.8):
            what = "join"
        self.joined.add(name)
        if what == "leave":
            self.joined.discard(name)
        base = {"groupId": g, "memberId": f"$cmid:{name}", "instanceId": self.instance(name, m, what == "join")}
        classic = [n for n, o in self.sc.members.items() if o["kind"] == "classic" and o["group"] == m["group"]]
        if what == "join" and classic and self.ident.random() < 0.1:
            base["memberId"] = f"$mid:{self.ident.choice(classic)}"     # an id a classic member has
        if what in ("join", "beat_change"):
            regex = self.pick(None, None, None, "all", "t2", "none", "bad")
            names = self.pick([], ["t1"], ["t2"], ["t1", "t2"], ["tx"]) if regex else \
                self.pick(["t1"], ["t2"], ["t1", "t2"], ["tx"], [])
            body = dict(base, memberEpoch=0 if what == "join" else f"$epoch:{name}",
                        rackId=self.pick(None, None, "rack-a"),
                        rebalanceTimeoutMs=self.pick(30000, 30000, 6000, -1) if what == "join" else -1,
                        subscribedTopicNames=[f"$topic:{t}" for t in names],
                        subscribedTopicRegex=f"$regex:{regex}" if regex else None,
                        serverAssignor=self.pick(None, None, "uniform", "range", "bogus"),
                        topicPartitions=[] if what == "join" else f"$owned:{name}")
            self.step(name, CG_HEARTBEAT, body)
            if regex or self.chance(0.5):          # the broker resolves a new regex just after
                self.sc.steps.append({"sleep": REGEX_SLEEP_MS if regex else SHORT_SLEEP_MS})
        elif what in ("beat", "bad_epoch"):
            epoch = f"$epoch:{name}" if what == "beat" else self.pick(f"$epoch+1:{name}", -3, "$epoch-1:" + name)
            self.step(name, CG_HEARTBEAT, dict(base, memberEpoch=epoch, rebalanceTimeoutMs=-1,
                                               subscribedTopicNames=None, subscribedTopicRegex=None,
                                               serverAssignor=None, rackId=None,
                                               topicPartitions=f"$owned:{name}"))
        elif what == "leave":
            epoch = -2 if m["instance"] and self.chance(0.5) else -1
            self.step(name, CG_HEARTBEAT, dict(base, memberEpoch=epoch, rebalanceTimeoutMs=-1,
                                               subscribedTopicNames=None, subscribedTopicRegex=None,
                                               serverAssignor=None, rackId=None, topicPartitions=None))
        elif what == "commit":
            epoch = self.pick(f"$epoch:{name}", f"$epoch:{name}", f"$epoch+1:{name}", f"$epoch-1:{name}")
            self.commit(name, g, epoch, self.pick(f"$cmid:{name}", f"$cmid:{name}", ""), None, m)
        else:
            self.fetch(name, [m["group"]], self.pick(f"$epoch:{name}", -1, f"$epoch+1:{name}"),
                       f"$cmid:{name}")

    # ------------------------------------------------------------------ admin
    def admin(self) -> None:
        groups = sorted({m["group"] for m in self.sc.members.values()}) or ["g1"]
        what = self.r.choices(["describe", "list", "delete", "offset_delete", "fetch", "cg_describe",
                               "find", "simple_commit", "txn_commit"], [4, 2, 1, 2, 2, 3, 1, 2, 1])[0]
        some = self.r.sample(groups + ["g3"], self.r.randint(1, len(groups)))
        if self.chance(0.1):
            some = some + [some[0]]              # a duplicate id
        if self.chance(0.05) and what not in ("simple_commit", "txn_commit"):
            some = [""]                          # the empty group id (one for the whole cluster: never written)
        ids = [f"$group:{g}" if g else "" for g in some]
        if what == "describe":
            self.step("adm", DESCRIBE_GROUPS, {"groups": ids, "includeAuthorizedOperations": self.chance(0.3)})
        elif what == "list":
            self.step("adm", LIST_GROUPS, {
                "statesFilter": self.r.sample(STATES, self.r.randint(0, 2)),
                "typesFilter": self.pick([], [], ["classic"], ["consumer"], ["Classic", "share"])})
        elif what == "delete":
            self.step("adm", DELETE_GROUPS, {"groupsNames": ids})
        elif what == "offset_delete":
            t = self.pick("t1", "t2", "tx")
            self.step("adm", OFFSET_DELETE, {"groupId": ids[0], "topics": [
                {"name": f"$topic:{t}", "partitions": [{"partitionIndex": p} for p in self.pick([0], [0, 1], [5])]}]})
        elif what == "fetch":
            self.fetch("adm", some, -1, None)
        elif what == "cg_describe":
            self.step("adm", CG_DESCRIBE, {"groupIds": ids, "includeAuthorizedOperations": self.chance(0.3)})
        elif what == "find":
            self.step("adm", FIND_COORDINATOR, {"key": ids[0], "keyType": 0, "coordinatorKeys": ids})
        elif what == "simple_commit":
            self.commit("adm", ids[0], -1, "", None, {"topics": self.pick(["t1"], ["t2"], ["t1", "t2"])})
        else:
            t = self.pick("t1", "t2")
            self.step("adm", TXN_OFFSET_COMMIT, {
                "transactionalId": f"$txn:{self.r.randint(1, 3)}", "groupId": ids[0],
                "producerId": self.r.randint(1000, 1003), "producerEpoch": 0, "generationIdOrMemberEpoch": -1,
                "memberId": "", "groupInstanceId": None,
                "topics": [{"name": f"$topic:{t}", "partitions": [
                    {"partitionIndex": 0, "committedOffset": self.r.randint(0, 9), "committedLeaderEpoch": -1,
                     "committedMetadata": ""}]}]})


def generate(seed: int, ranges: dict | None = None) -> Scenario:
    return _Gen(seed, dict(ranges or DEFAULT_RANGES)).scenario()


def member_id_for(seed: int, name: str) -> str:
    """A consumer-protocol member's own id (clients choose them, KIP-848): 22 URL-safe characters."""
    raw = random.Random(f"{seed}/{name}").getrandbits(128).to_bytes(16, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
