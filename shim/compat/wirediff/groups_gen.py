"""Share-group (KIP-932) and streams-group (KIP-1071) members of a wire scenario, with admin steps
naming their groups. kshim passes these groups through to the broker (shim/groupservice/broker_groups.py), so
what is compared is the pass-through: routing to the group's coordinator, the wrong-type answers when a
share or streams member uses a group id a classic/consumer member of the same seed uses (Kafka's
GroupMetadataManager: "Group g is not a share group."), and DescribeGroups, ListGroups, DeleteGroups,
ConsumerGroupDescribe naming them.

Everything here draws from its own random stream (`{seed}/sg`) and is added after the classic and
consumer steps are drawn, its steps slotted in between theirs in order: a seed keeps every
classic/consumer step it had before share and streams members existed. Requests follow the checks of
GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid and
throwIfStreamsGroupHeartbeatRequestIsInvalid (Kafka 4.3): a valid join is epoch 0 with subscribed
topics (share) or epoch 0, a rebalance timeout, empty task lists and a topology (streams); some steps
break them on purpose."""

from __future__ import annotations

import random
import uuid

from kcodec.protocol import ApiKey

SG_HEARTBEAT, SG_DESCRIBE = ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE
ST_HEARTBEAT, ST_DESCRIBE = ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE
RANGES = {SG_HEARTBEAT: (1, 1), SG_DESCRIBE: (1, 1), ST_HEARTBEAT: (0, 0), ST_DESCRIBE: (0, 0)}
RATE = 0.25                       # share of seeds with share/streams members
NEEDS = {"share": (SG_HEARTBEAT, SG_DESCRIBE), "streams": (ST_HEARTBEAT, ST_DESCRIBE)}


def client_uuid(seed: int, name: str, what: str = "member") -> str:
    """A share/streams member's own id (the client generates a UUID string: KafkaShareConsumer,
    StreamsGroupHeartbeatRequestManager), derived from the seed so runs reproduce."""
    return str(uuid.UUID(int=random.Random(f"{seed}/{name}/{what}").getrandbits(128), version=4))


class GroupsGen:
    def __init__(self, gen):
        self.g = gen                              # the scenario's _Gen (ranges, members, steps)
        self.r = random.Random(f"{gen.sc.seed}/sg")
        self.steps: list[dict] = []
        self.joined: set[str] = set()

    def pick(self, *options):
        return self.r.choice(options)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def step(self, conn: str, api_key: int, body: dict) -> None:
        lo, hi = self.g.ranges[api_key]
        self.steps.append({"conn": conn, "api": int(api_key), "v": self.r.randint(lo, hi), "body": body,
                           "pipe": self.chance(0.3)})

    # ------------------------------------------------------------------ members and steps
    def add(self) -> None:
        kinds = [k for k, keys in NEEDS.items() if all(key in self.g.ranges for key in keys)]
        if not kinds or not self.chance(RATE):
            return
        sc = self.g.sc
        others = sorted({m["group"] for m in sc.members.values()})
        new = []
        for i in range(self.r.randint(1, 2)):
            kind = self.pick(*kinds)
            name = f"m{len(sc.members) + 1}"
            own = "sg1" if kind == "share" else "st1"
            group = self.pick(own, own, *others) if others else own   # others: the wrong-type answers
            static = kind == "streams" and self.chance(0.1)   # refused before Kafka 4.4 ("Static membership is not yet supported.")
            sc.members[name] = {"kind": kind, "group": group, "instance": f"i{name}" if static else None,
                                "topics": self.pick(["t1"], ["t2"], ["t1", "t2"]), "versions": {}}
            new.append(name)
        groups = sorted({sc.members[n]["group"] for n in new})
        for _ in range(self.r.randint(4, 12)):
            if self.chance(0.25):
                self.admin(groups, others)
            else:
                name = self.pick(*new)
                (self.share if sc.members[name]["kind"] == "share" else self.streams)(name, sc.members[name])
        self.merge()

    def merge(self) -> None:
        slot_in(self.g.sc.steps, self.steps, self.r)

    def _what(self, name: str, weights: dict) -> str:
        what = self.r.choices(list(weights), list(weights.values()))[0]
        if name not in self.joined and self.chance(0.8):
            what = "join"
        self.joined.add(name)
        if what in ("leave", "static_leave"):
            self.joined.discard(name)
        return what

    def share(self, name: str, m: dict) -> None:
        what = self._what(name, {"join": 2, "beat": 6, "bad_epoch": 1, "leave": 1, "describe": 1})
        base = {"groupId": f"$group:{m['group']}", "memberId": f"$smid:{name}", "rackId": None,
                "subscribedTopicNames": None}
        if what == "join":
            topics = self.pick(m["topics"], m["topics"], m["topics"], ["tx"], [])   # [] is refused
            self.step(name, SG_HEARTBEAT, dict(base, memberEpoch=0, rackId=self.pick(None, None, "rack-a"),
                                               subscribedTopicNames=[f"$topic:{t}" for t in topics]))
            if self.chance(0.5):
                self.steps.append({"sleep": 60})
        elif what == "beat":
            body = dict(base, memberEpoch=f"$epoch:{name}")
            if self.chance(0.15):
                body["subscribedTopicNames"] = [f"$topic:{t}" for t in self.pick(["t1"], ["t1", "t2"])]
            self.step(name, SG_HEARTBEAT, body)
        elif what == "bad_epoch":
            self.step(name, SG_HEARTBEAT, dict(base, memberEpoch=self.pick(f"$epoch+1:{name}", f"$epoch-1:{name}",
                                                                           -2, 7)))
        elif what == "leave":
            self.step(name, SG_HEARTBEAT, dict(base, memberEpoch=-1))
        else:
            self.describe(name, SG_DESCRIBE, [m["group"]])

    def streams(self, name: str, m: dict) -> None:
        what = self._what(name, {"join": 2, "beat": 6, "bad_epoch": 1, "leave": 1, "static_leave": 1,
                                 "describe": 1})
        base = {"groupId": f"$group:{m['group']}", "memberId": f"$smid:{name}", "memberEpoch": f"$epoch:{name}",
                "endpointInformationEpoch": 0, "instanceId": m["instance"], "rackId": None,
                "rebalanceTimeoutMs": -1, "topology": None, "activeTasks": None, "standbyTasks": None,
                "warmupTasks": None, "processId": None, "userEndpoint": None, "clientTags": None,
                "taskOffsets": None, "taskEndOffsets": None, "shutdownApplication": False}
        if what == "join":
            source = self.pick(m["topics"][:1], m["topics"][:1], m["topics"], ["tx"])
            topology = {"epoch": self.pick(0, 0, 1), "subtopologies": [{
                "subtopologyId": "0", "sourceTopics": [f"$topic:{t}" for t in source], "sourceTopicRegex": [],
                "stateChangelogTopics": [], "repartitionSinkTopics": [], "repartitionSourceTopics": [],
                "copartitionGroups": []}]}
            bad = self.chance(0.1)                # a join the broker refuses (INVALID_REQUEST)
            self.step(name, ST_HEARTBEAT, dict(
                base, memberEpoch=0, rebalanceTimeoutMs=-1 if bad else self.pick(30000, 30000, 6000),
                topology=topology, activeTasks=[], standbyTasks=[], warmupTasks=[],
                processId=f"$sprocess:{name}", rackId=self.pick(None, None, "rack-a"),
                clientTags=[] if self.chance(0.5) else None))
            if self.chance(0.5):
                self.steps.append({"sleep": 60})
        elif what == "beat":
            self.step(name, ST_HEARTBEAT, dict(base, **({"activeTasks": f"$tasks:{name}", "standbyTasks": [],
                                                         "warmupTasks": []} if self.chance(0.5) else {})))
        elif what == "bad_epoch":
            self.step(name, ST_HEARTBEAT, dict(base, memberEpoch=self.pick(f"$epoch+1:{name}", f"$epoch-1:{name}", -3)))
        elif what in ("leave", "static_leave"):
            self.step(name, ST_HEARTBEAT, dict(base, memberEpoch=-2 if what == "static_leave" else -1))
        else:
            self.describe(name, ST_DESCRIBE, [m["group"]])

    def describe(self, conn: str, api_key: int, groups: list[str]) -> None:
        self.step(conn, api_key, {"groupIds": [f"$group:{g}" for g in groups],
                                  "includeAuthorizedOperations": self.chance(0.3)})

    def admin(self, groups: list[str], others: list[str]) -> None:
        what = self.r.choices(["sg_describe", "st_describe", "describe", "list", "delete", "cg_describe"],
                              [2, 2, 2, 2, 1, 1])[0]
        some = self.r.sample(groups + others + ["g3"], self.r.randint(1, len(groups) + 1))
        if what == "sg_describe" and SG_DESCRIBE in self.g.ranges:
            self.describe("adm", SG_DESCRIBE, some)
        elif what == "st_describe" and ST_DESCRIBE in self.g.ranges:
            self.describe("adm", ST_DESCRIBE, some)
        elif what == "describe" and ApiKey.DESCRIBE_GROUPS in self.g.ranges:
            self.step("adm", ApiKey.DESCRIBE_GROUPS, {"groups": [f"$group:{g}" for g in some],
                                                      "includeAuthorizedOperations": self.chance(0.3)})
        elif what == "list" and ApiKey.LIST_GROUPS in self.g.ranges:
            self.step("adm", ApiKey.LIST_GROUPS, {
                "statesFilter": self.pick([], [], ["Empty"], ["Stable", "NotReady"], ["Assigning"]),
                "typesFilter": self.pick([], ["share"], ["streams"], ["share", "streams"], ["Share", "consumer"])})
        elif what == "delete" and ApiKey.DELETE_GROUPS in self.g.ranges:
            self.step("adm", ApiKey.DELETE_GROUPS, {"groupsNames": [f"$group:{g}" for g in some]})
        elif what == "cg_describe" and ApiKey.CONSUMER_GROUP_DESCRIBE in self.g.ranges:
            self.describe("adm", ApiKey.CONSUMER_GROUP_DESCRIBE, some)


def slot_in(steps: list, new: list, r: random.Random) -> None:
    """Slot `new` in between the scenario's `steps` at random places, keeping both orders."""
    slots = sorted(r.randint(0, len(steps)) for _ in new)
    out, j = [], 0
    for i, s in enumerate(steps):
        while j < len(slots) and slots[j] == i:
            out.append(new[j])
            j += 1
        out.append(s)
    out += new[j:]
    steps[:] = out
