"""A target of the wire tester (a bootstrap: kshim or a Kafka cluster): its API version ranges, the
run's topics created on it and their ids, and the coordinator of each group id."""

from __future__ import annotations

import asyncio
import struct

from kcodec import api
from kcodec.protocol import ApiKey, Error

from .generate import DEFAULT_RANGES, TOPICS

API_VERSIONS, METADATA, CREATE_TOPICS = ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.CREATE_TOPICS
FIND_COORDINATOR, DESCRIBE_GROUPS = ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_GROUPS
CONSUMER_GROUP_HEARTBEAT, INIT_PRODUCER_ID = ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.INIT_PRODUCER_ID


async def call(host: str, port: int, api_key: int, version: int, req, timeout: float = 15.0):
    """One request on a fresh connection; the decoded answer."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        hdr = api.RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=1,
                                client_id="kw-setup")
        payload = hdr.encode(api.request_header_version(api_key, version)) + req.encode(version)
        writer.write(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), timeout))[0]
        frame = await asyncio.wait_for(reader.readexactly(size), timeout)
        rhv = 0 if api_key == API_VERSIONS else api.response_header_version(api_key, version)
        _, pos = api.ResponseHeader.decode_from(frame, 0, rhv)
        return api.RESPONSES[api_key].decode(memoryview(frame)[pos:], version)
    finally:
        writer.close()


class Target:
    def __init__(self, label: str, bootstrap: str, run_id: str):
        host, port = bootstrap.rsplit(":", 1)
        self.label, self.bootstrap, self.host, self.port = label, bootstrap, host, int(port)
        self.run_id = run_id
        self.prefix = f"{run_id}-{label}"          # group ids of this target
        self.topic_ids: dict[str, str] = {}
        self.ranges: dict[int, tuple[int, int]] = {}
        self._coordinators: dict[str, tuple[str, int]] = {}
        self.runs: dict[int, int] = {}             # seed -> times run on this target

    def topic(self, sym: str) -> str:
        return f"{self.run_id}-{sym}"

    def regex(self, kind: str) -> str:
        return {"all": f"{self.run_id}-t.*", "t2": f"{self.run_id}-t2", "none": f"{self.run_id}-zz.*",
                "bad": f"{self.run_id}-(t"}[kind]

    async def setup(self) -> None:
        av = await call(self.host, self.port, API_VERSIONS, 3,
                        api.REQUESTS[API_VERSIONS](client_software_name="kshim-wire", client_software_version="1"))
        offered = {k.api_key: (k.min_version, k.max_version) for k in av.api_keys}
        for key, (lo, hi) in DEFAULT_RANGES.items():
            if key in offered:
                self.ranges[key] = (max(lo, offered[key][0]), min(hi, offered[key][1]))
        create = api.REQUESTS[CREATE_TOPICS]
        req = create.from_json({"topics": [{"name": self.topic(t), "numPartitions": n, "replicationFactor": -1,
                                            "assignments": [], "configs": []} for t, n in TOPICS.items()],
                                "timeoutMs": 15000, "validateOnly": False}, 7)
        resp = await call(self.host, self.port, CREATE_TOPICS, 7, req)
        for t in resp.topics:
            if t.error_code not in (Error.NONE, Error.TOPIC_ALREADY_EXISTS):
                raise RuntimeError(f"{self.label}: cannot create topic {t.name}: error {t.error_code}")
        await self.warm_groups()
        await self.warm_transactions()
        names = {self.topic(t): t for t in TOPICS}
        for _ in range(100):
            md = await call(self.host, self.port, METADATA, 12, api.REQUESTS[METADATA].from_json(
                {"topics": [{"name": n, "topicId": "AAAAAAAAAAAAAAAAAAAAAA"} for n in names],
                 "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False}, 12))
            ok = {t.name: t for t in md.topics
                  if t.error_code == Error.NONE and all(p.leader_id >= 0 for p in t.partitions)
                  and len(t.partitions) == TOPICS[names[t.name]]}
            if len(ok) == len(names):
                from kcodec._json import uuid_to_kafka
                self.topic_ids = {names[n]: uuid_to_kafka(t.topic_id) for n, t in ok.items()}
                return await self.warm_topics(ok)
            await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.label}: topics {sorted(names)} not ready")

    async def warm_topics(self, topics: dict) -> None:
        """The group coordinator learns new topics from the metadata log a moment after Metadata shows
        them; until then a consumer group subscribing to them is assigned nothing. A probe member
        heartbeats until it is assigned every partition of the run's topics, then leaves."""
        if CONSUMER_GROUP_HEARTBEAT not in self.ranges:
            return
        group, member = f"{self.run_id}-{self.label}-probe", "kwprobe" + "0" * 15
        host, port = await self.coordinator(group)
        want = sum(len(t.partitions) for t in topics.values())
        epoch, body = 0, {"groupId": group, "memberId": member, "instanceId": None, "rackId": None,
                          "rebalanceTimeoutMs": 30000, "subscribedTopicNames": sorted(topics),
                          "subscribedTopicRegex": None, "serverAssignor": None, "topicPartitions": []}
        v = self.ranges[CONSUMER_GROUP_HEARTBEAT][1]
        if v < 1:                              # Kafka 3.9: ConsumerGroupHeartbeat v0 has no regex field
            del body["subscribedTopicRegex"]
        for _ in range(100):
            resp = await call(host, port, CONSUMER_GROUP_HEARTBEAT, v, api.REQUESTS[CONSUMER_GROUP_HEARTBEAT].from_json(
                {**body, "memberEpoch": epoch}, v))
            if resp.error_code == 0:
                epoch = resp.member_epoch
                if resp.assignment is not None and sum(len(tp.partitions) for tp in resp.assignment.topic_partitions) == want:
                    break
            await asyncio.sleep(0.1)
        await call(host, port, CONSUMER_GROUP_HEARTBEAT, v, api.REQUESTS[CONSUMER_GROUP_HEARTBEAT].from_json(
            {**body, "memberEpoch": -1, "rebalanceTimeoutMs": -1, "subscribedTopicNames": None,
             "topicPartitions": None}, v))

    async def warm_transactions(self) -> None:
        """The broker creates its transaction-state partitions on the first FindCoordinator for a
        transactional id and answers COORDINATOR_NOT_AVAILABLE until they are loaded, then
        InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS while they load: ask until every one of a
        few ids has a coordinator and a producer id, so no scenario sees the first-use delay."""
        init = INIT_PRODUCER_ID in self.ranges
        for i in range(16):
            tid = f"{self.run_id}-warm-{i}"
            for _ in range(100):
                resp = await call(self.host, self.port, FIND_COORDINATOR, 1,
                                  api.REQUESTS[FIND_COORDINATOR](key=tid, key_type=1))
                if resp.error_code == Error.NONE and init:
                    resp = await call(self.host, self.port, INIT_PRODUCER_ID, self.ranges[INIT_PRODUCER_ID][0],
                                      api.REQUESTS[INIT_PRODUCER_ID](transactional_id=tid, transaction_timeout_ms=60000))
                if resp.error_code == Error.NONE:
                    break
                await asyncio.sleep(0.1)

    async def warm_groups(self) -> None:
        """A fresh broker creates __consumer_offsets on the first FindCoordinator for a group and
        answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS until its partitions are loaded: ask
        until DescribeGroups of 512 ids (every offsets partition, in all likelihood) answers cleanly."""
        ids = [f"{self.run_id}-warm-{i}" for i in range(512)]
        for _ in range(300):
            found = await call(self.host, self.port, FIND_COORDINATOR, 1,
                               api.REQUESTS[FIND_COORDINATOR](key=ids[0], key_type=0))
            if found.error_code == Error.NONE:
                described = await call(found.host, found.port, DESCRIBE_GROUPS, 0,
                                       api.REQUESTS[DESCRIBE_GROUPS](groups=ids))
                if all(g.error_code == Error.NONE for g in described.groups):
                    return
            await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.label}: the group coordinators are not ready")

    async def coordinator(self, group: str) -> tuple[str, int]:
        found = self._coordinators.get(group)
        if found is None:
            resp = await call(self.host, self.port, FIND_COORDINATOR, 1,
                              api.REQUESTS[FIND_COORDINATOR](key=group, key_type=0))
            found = (resp.host, resp.port) if resp.error_code == Error.NONE else (self.host, self.port)
            self._coordinators[group] = found
        return found
