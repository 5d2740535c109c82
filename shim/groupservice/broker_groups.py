"""The broker's groups: share groups (KIP-932) and streams groups (KIP-1071) pass through kshim to
the broker's group coordinator, which owns them (a share group's delivery state lives in the brokers'
share coordinator, a streams group's in __consumer_offsets), while kshim stays the cluster to the client.

One group namespace. A group id is kshim's when its coordinator holds the group (classic or consumer
group, or committed offsets), else the broker's when it is a share or streams group there (`kinds`:
learned from the answers that pass through here and from the brokers' ListGroups), else whoever the
request's group type says: the share and streams APIs go to the broker, the others to kshim.
- Share and streams APIs (ShareGroupHeartbeat, ShareGroupDescribe, Describe/Alter/
  DeleteShareGroupOffsets, StreamsGroupHeartbeat, StreamsGroupDescribe; `handle`) for a group kshim
  holds are answered as Kafka answers them for a group of another type: GROUP_ID_NOT_FOUND, "Group %s
  is not a share group." (GroupMetadataManager.getOrMaybeCreateShareGroup, shareGroup) / "... is not
  a streams group." (castToStreamsGroup); per group in the batched describes.
- kshim's group APIs for a broker group (`takes`): JoinGroup, OffsetCommit, OffsetFetch,
  TxnOffsetCommit, DeleteGroups, DescribeGroups, ConsumerGroupDescribe, ... go to the broker, which
  checks a streams member's epoch on its commits and answers a wrong-type request itself.
- The broker's other groups (classic and consumer groups it lists that kshim does not hold: `listed`)
  are described and deleted by the broker (DescribeGroups, ConsumerGroupDescribe, DeleteGroups), so
  the admin view covers every group of the cluster; their members and offsets are not kshim's.
- Batched requests naming groups of both are split, and the answers merged in request order
  (batches.py); ListGroups lists the union (`listing`: every broker's groups, then kshim's).

Routing (broker_coordinators.py): each request goes to the broker coordinating its group, on kshim's
own pipelined connection to that broker, whichever kshim port the client used; a moved coordinator is
retried there, so the client does not see it unless the cluster has none. Single-group requests are
forwarded as the client's bytes (its client id kept: the broker reports it for the member), and the
answer decoded only to learn and to retry.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable

from kcodec import api
from kcodec.generated import describe_share_group_offsets, share_group_describe, streams_group_describe
from kcodec.generated.list_groups import ListGroupsRequest
from kcodec.protocol import ApiKey, Error

from ..authz.acl import DELETE, DESCRIBE, READ
from .bodies import read_or_close
from .broker_coordinators import BrokerCoordinators, BrokerUnavailable, encode_request, request
from .batches import group_ids, merge_entries, subset
from .heartbeat_checks import share_heartbeat, streams_heartbeat

if TYPE_CHECKING:
    from .authz import AuthzService
    from .host import Connection, Host, Slot
    from .runtime import GroupRuntime

log = logging.getLogger("kshim.groups")

SHARE, STREAMS = "share", "streams"
KIND_OF_API = {
    ApiKey.SHARE_GROUP_HEARTBEAT: SHARE, ApiKey.SHARE_GROUP_DESCRIBE: SHARE,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: SHARE, ApiKey.ALTER_SHARE_GROUP_OFFSETS: SHARE,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: SHARE,
    ApiKey.STREAMS_GROUP_HEARTBEAT: STREAMS, ApiKey.STREAMS_GROUP_DESCRIBE: STREAMS,
    # Kafka 4.4 (KIP-1331): a streams member pushes its topology description to the group's coordinator
    ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: STREAMS,
}
# answers that say a group of this kind exists when NONE (the heartbeats and AlterShareGroupOffsets
# create it: GroupMetadataManager.getOrMaybeCreateShareGroup(groupId, true))
CREATES = frozenset({ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.ALTER_SHARE_GROUP_OFFSETS})
DESCRIBES = frozenset({ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.STREAMS_GROUP_DESCRIBE})
LIST_GROUPS, DELETE_GROUPS = ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS
GROUP_ID_NOT_FOUND = Error.GROUP_ID_NOT_FOUND
SHARE_GROUP_HEARTBEAT = ApiKey.SHARE_GROUP_HEARTBEAT
# the group right each API needs (KafkaApis.handleShareGroupHeartbeat ... handleDeleteGroupsRequest);
# every other group API: READ
OPERATION = {ApiKey.SHARE_GROUP_DESCRIBE: DESCRIBE, ApiKey.STREAMS_GROUP_DESCRIBE: DESCRIBE,
             ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: DESCRIBE, ApiKey.DELETE_SHARE_GROUP_OFFSETS: DELETE,
             ApiKey.DESCRIBE_GROUPS: DESCRIBE, ApiKey.CONSUMER_GROUP_DESCRIBE: DESCRIBE,
             ApiKey.OFFSET_FETCH: DESCRIBE, ApiKey.DELETE_GROUPS: DELETE, ApiKey.OFFSET_DELETE: DELETE}
GROUP_AUTHORIZATION_FAILED = Error.GROUP_AUTHORIZATION_FAILED
# (request, release kshim answers as) -> the broker's answer to an invalid request, or None
CHECKS = {ApiKey.SHARE_GROUP_HEARTBEAT: lambda req, _release: share_heartbeat(req),
          ApiKey.STREAMS_GROUP_HEARTBEAT: streams_heartbeat}
# kshim's group APIs that also reach the broker's classic and consumer groups (`listed`)
ADMIN_APIS = frozenset({ApiKey.DESCRIBE_GROUPS, ApiKey.CONSUMER_GROUP_DESCRIBE, DELETE_GROUPS})
ENTRY_CLASSES = {ApiKey.SHARE_GROUP_DESCRIBE: share_group_describe.DescribedGroup,
                 ApiKey.STREAMS_GROUP_DESCRIBE: streams_group_describe.DescribedGroup,
                 ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: describe_share_group_offsets.DescribeShareGroupOffsetsResponseGroup}


class BrokerGroups:
    def __init__(self, proxy: "Host", runtime: "GroupRuntime", authz: "AuthzService | None" = None):
        self.proxy, self.runtime = proxy, runtime
        self.kinds: dict[str, str] = {}            # the broker's share and streams groups
        self.listed: dict[str, str] = {}           # the broker's other groups (type) as it last listed them
        self.links = BrokerCoordinators(proxy)     # group id -> its broker coordinator, connections to it
        self._listed: dict[int, list] = {}         # id(slot) -> the brokers' groups for a ListGroups
        # groupservice/authz.py's AuthzService (SASL upstream / authorizer): kshim's own connection carries
        # these requests, so the caller's group right is checked here first
        self.authz = authz
        # adoption.py's HandOver (a streams join on an Empty classic group); it uses this object, so it
        # is set once both exist
        self.hand_over = None
        # False: the upstream has share groups off (ProxyServer._probe_share_protocol) and answers every
        # share API UNSUPPORTED_VERSION before looking at groups or rights: they all pass through
        self.share_protocol = True

    def install(self) -> None:
        for api_key in KIND_OF_API:
            self.proxy.routes[api_key] = self.handle

    def close(self) -> None:
        self.links.close()

    def kshim_holds(self, group_id: str) -> bool:
        return self.runtime.holds(group_id)

    # ------------------------------------------------------------------ the share and streams APIs
    def handle(self, session: "Connection", slot: "Slot", frame) -> bool:
        req = read_or_close(session, slot, frame)
        if req is None:
            return True
        kind = KIND_OF_API[slot.api_key]
        gids, batch = group_ids(slot.api_key, slot.version, req)
        if kind == SHARE and not self.share_protocol:     # answered before groups and rights are looked at
            if self.authz is None or self.authz.admitted(session):
                self._spawn(self.forward(session, slot, frame, req, gids, batch))
            return True
        denied = self._denied(session, slot, gids)
        if denied is None:
            return True
        mine = {g for g in gids if self.kshim_holds(g)} - denied
        if not mine and not denied:
            self._spawn(self.forward(session, slot, frame, req, gids, batch))
        elif batch is None and mine and self.hand_over is not None and self.hand_over.takes(session, slot, frame, req):
            pass                               # a streams join taking over kshim's Empty classic group
        elif batch is None:
            self.complete(session, slot, self.refusal(slot.api_key, kind, gids[0], req) if mine
                           else error_answer(slot.api_key, GROUP_AUTHORIZATION_FAILED))
        else:
            local = [wrong_type_entry(slot.api_key, kind, g) if g in mine else
                     entry(slot.api_key, g, GROUP_AUTHORIZATION_FAILED) for g in gids if g in mine or g in denied]
            theirs = [g for g in gids if g not in mine and g not in denied]
            self._spawn(self._forward_split(session, slot, req, batch, theirs, gids, local))
        return True

    def refusal(self, api_key: int, kind: str, group_id: str, req):
        """A single-group share/streams request for a group kshim holds: the broker's answer to an
        invalid request first (heartbeat_checks.py), else the wrong-type answer."""
        check = CHECKS.get(api_key)
        invalid = check(req, self.runtime.coordinator.cfg.release) if check is not None else None
        if invalid is None and api_key == SHARE_GROUP_HEARTBEAT and req.member_epoch != 0 \
                and not self.runtime.has_group(group_id):
            # kshim holds only the group's offsets (no group in the latest state): a leave reads the
            # group (GroupMetadataManager.shareGroup -> group: "Group %s not found."), another
            # heartbeat getOrMaybeCreateShareGroup without creating ("Share group %s not found.");
            # found by the wire differential tester (seed 497)
            invalid = (GROUP_ID_NOT_FOUND, ("Group %s not found." if req.member_epoch == -1
                                            else "Share group %s not found.") % group_id)
        if invalid is None:
            return wrong_type_answer(api_key, kind, group_id)
        body = error_answer(api_key, invalid[0])
        body.error_message = invalid[1]
        return body

    def _denied(self, session, slot, gids) -> set[str] | None:
        """The groups the caller may not use this way (None: the connection is closed: a request before
        SASL authentication)."""
        authz = self.authz
        if authz is None:
            return set()
        if not authz.admitted(session):
            return None
        op = OPERATION.get(slot.api_key, READ)
        return {g for g in gids if not authz.allows_group(session, op, g)}

    # ------------------------------------------------------------------ kshim's group APIs
    def theirs(self, slot: "Slot", req) -> list[str]:
        """The broker's groups a request of kshim's group APIs names ([] on the common path)."""
        if not (self.kinds or self.listed) or slot.api_key == LIST_GROUPS:
            return []
        gids, _ = group_ids(slot.api_key, slot.version, req)
        admin = slot.api_key in ADMIN_APIS
        return [g for g in gids if (g in self.kinds or (admin and g in self.listed)) and not self.kshim_holds(g)]

    async def split_off(self, session: "Connection", slot: "Slot", req, frame, theirs: list[str]):
        """A request naming the broker's groups `theirs`: None when it is answered (forwarded whole, or
        refused), else (kshim's part of it, an amend merging the broker's entries into kshim's answer,
        or None when kshim answers it all: its authorization refuses per entry, as the broker)."""
        denied = self._denied(session, slot, theirs)
        if denied is None:
            return None
        if denied:                             # kshim's authorization answers it, per entry as the broker
            return req, None
        gids, batch = group_ids(slot.api_key, slot.version, req)
        if batch is None or len(theirs) == len(gids):
            await self.forward(session, slot, frame, req, gids, batch)
            return None
        entries = await self._broker_entries(session, slot, req, batch, theirs)
        if entries is None or session.closed:
            return None
        local = subset(req, batch, set(gids) - set(theirs))
        return local, lambda body: merge_entries(gids, batch, body, entries)

    # ------------------------------------------------------------------ ListGroups
    def listing_patch(self, slot: "Slot") -> Callable | None:
        """The patch adding the brokers' groups (fetched by `list_brokers`) to kshim's ListGroups answer."""
        extra = self._listed.pop(id(slot), None)
        if not extra:
            return None

        def add(body):
            known = {g.group_id for g in body.groups}
            body.groups.extend(g for g in extra if g.group_id not in known)
        return add

    async def list_brokers(self, slot: "Slot", req) -> None:
        """Every broker's groups (ListGroups with the client's filters: each broker lists the groups it
        coordinates), kept for `listing_patch`; kshim's own groups win a name both hold."""
        nodes = sorted(self.proxy.topology.brokers)
        results = await asyncio.gather(*(self._list_one(n, slot.version, req) for n in nodes),
                                       return_exceptions=True)
        groups, seen = [], set()
        for node, res in zip(nodes, results):
            if isinstance(res, BaseException):
                log.warning("ListGroups from broker %s failed: %s", node, res)
                continue
            for g in res:
                if g.group_id not in seen and not self.kshim_holds(g.group_id):
                    seen.add(g.group_id)
                    groups.append(g)
        self._listed[id(slot)] = groups

    async def _list_one(self, node: int, version: int, req) -> list:
        conn = await self.links.conn(node)
        lo, hi = conn.versions.get(LIST_GROUPS, (0, version))
        v = max(lo, min(version, hi))
        resp = await request(conn, LIST_GROUPS, v, ListGroupsRequest(
            states_filter=list(req.states_filter or []) if v >= 4 else [],
            types_filter=list(req.types_filter or []) if v >= 5 else []))
        for g in resp.groups:
            if v >= 5 and g.group_type in (SHARE, STREAMS):
                self.kinds[g.group_id] = g.group_type
            elif v >= 5:
                self.listed[g.group_id] = g.group_type
        return list(resp.groups) if not resp.error_code else []

    async def learn_all(self) -> None:
        """The brokers' groups (at start: the group ids that are theirs)."""
        for node in sorted(self.proxy.topology.brokers):
            try:
                await self._list_one(node, 5, ListGroupsRequest(states_filter=[], types_filter=[]))
            except Exception as e:
                log.warning("cannot list broker %s's share and streams groups: %s", node, e)

    # ------------------------------------------------------------------ forwarding
    async def forward(self, session, slot, frame, req, gids: list[str], batch) -> None:
        """One request for groups of one coordinator as the client's bytes; a batched request whose
        groups have different coordinators is split."""
        nodes = set()
        try:
            for g in gids:
                nodes.add(await self.links.node_for(g))
        except BrokerUnavailable as e:
            return self._unavailable(session, slot, e)
        if len(nodes) > 1 and batch is not None:
            return await self._forward_split(session, slot, req, batch, gids, gids, [])
        try:
            answer, msg = await self.links.ask(gids, frame, slot.api_key, slot.version)
        except BrokerUnavailable as e:
            return self._unavailable(session, slot, e)
        self._learn(slot.api_key, gids, msg)
        if not session.closed:
            session.complete(slot, answer)

    async def _forward_split(self, session, slot, req, batch, theirs, order, local: list) -> None:
        entries = await self._broker_entries(session, slot, req, batch, theirs)
        if entries is None:
            return
        body = api.RESPONSES[slot.api_key]()
        merge_entries(order, batch, body, entries + local)
        self.complete(session, slot, body)

    async def _broker_entries(self, session, slot, req, batch, gids) -> list | None:
        """The answers' entries for `gids`, one sub-request per coordinator."""
        by_node: dict[int, list[str]] = {}
        try:
            for g in gids:
                by_node.setdefault(await self.links.node_for(g), []).append(g)
        except BrokerUnavailable as e:
            self._unavailable(session, slot, e)
            return None
        entries = []
        for node_gids in by_node.values():
            sub = subset(req, batch, set(node_gids))
            frame = encode_request(slot.api_key, slot.version, slot.correlation_id, session.client_id, sub)
            try:
                _, msg = await self.links.ask(node_gids, frame, slot.api_key, slot.version)
            except BrokerUnavailable as e:
                self._unavailable(session, slot, e)
                return None
            self._learn(slot.api_key, node_gids, msg)
            entries.extend(getattr(msg, batch.response_attr) or [])
        return entries

    # ------------------------------------------------------------------ answers
    def _learn(self, api_key: int, gids: list[str], msg) -> None:
        kind = KIND_OF_API.get(api_key)
        if api_key in CREATES and getattr(msg, "error_code", None) == Error.NONE:
            self.kinds[gids[0]] = kind
        elif api_key in DESCRIBES:
            for e in msg.groups:
                if e.error_code == Error.NONE:
                    self.kinds[e.group_id] = kind
                elif e.error_code == GROUP_ID_NOT_FOUND and self.kinds.get(e.group_id) == kind:
                    del self.kinds[e.group_id]
        elif api_key == DELETE_GROUPS:
            for r in msg.results:
                if r.error_code == Error.NONE:
                    self.kinds.pop(r.group_id, None)
                    self.listed.pop(r.group_id, None)

    def complete(self, session, slot, body) -> None:
        if not session.closed:
            session.complete(slot, api.encode_response(slot.api_key, slot.version, slot.correlation_id, body))

    def _unavailable(self, session, slot, e: Exception) -> None:
        """No broker coordinator could be reached: the client's connection closes (it reconnects and
        retries, as after a broker failure), with the reason logged."""
        log.warning("%s for client %s: %s; closing its connection", api.API_KEYS.get(slot.api_key), session.peer, e)
        session.close()

    def _spawn(self, coro) -> None:
        asyncio.get_running_loop().create_task(coro)


# ---------------------------------------------------------------------- helpers
def wrong_type_message(kind: str, group_id: str) -> str:
    return f"Group {group_id} is not a {kind} group."


def wrong_type_answer(api_key: int, kind: str, group_id: str):
    """The answer to a share/streams request for one group kshim holds (GroupIdNotFoundException,
    mapped by GroupCoordinatorService.handleOperationException to the code and its message)."""
    body = api.RESPONSES[api_key]()
    body.error_code = GROUP_ID_NOT_FOUND
    body.error_message = wrong_type_message(kind, group_id)
    return body


def wrong_type_entry(api_key: int, kind: str, group_id: str):
    """A batched describe's entry for a group kshim holds."""
    return entry(api_key, group_id, GROUP_ID_NOT_FOUND, wrong_type_message(kind, group_id))


def entry(api_key: int, group_id: str, code: int, message: str | None = None):
    return ENTRY_CLASSES[api_key](group_id=group_id, error_code=code, error_message=message)


def error_answer(api_key: int, code: int):
    """A single-group share/streams request refused as a whole (`getErrorResponse`: the code only)."""
    body = api.RESPONSES[api_key]()
    body.error_code = code
    return body

