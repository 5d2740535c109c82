"""Scale-out: several kshim instances in front of one cluster split the groups by partition of the
state topic, as brokers split __consumer_offsets (docs/state-topic.md, "Several kshim instances").

`ScaleOut` sits beside the group service when `scale_out` is on, and drives its runtime through
`Runtime` (below; shim/groupservice/runtime.py implements it):
- membership.py/member_client.py decide which partitions this instance owns (an internal classic
  group on the real broker);
- a gained partition is taken (`StateLog.take`: marker, read to the end) and replayed into the
  coordinator; until then its groups are answered COORDINATOR_LOAD_IN_PROGRESS;
- a lost partition's groups are dropped from the coordinator at once (`GroupCoordinator.unload`:
  parked requests answered NOT_COORDINATOR) and its queued appends are not written;
- `route` answers requests for groups served elsewhere (shim/error_answers.py); `owner_of` tells
  FindCoordinator where a group lives; `list_groups` unions the other instances' ListGroups.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable, Protocol

from kcodec import api
from kcodec.generated.list_groups import ListGroupsRequest
from kcodec.protocol import ApiKey, Error

from .. import error_answers as answers
from ..kafkaclient.client import UpstreamClient
from . import format as fmt
from .member_client import MemberClient, now_ms
from .membership import Assignment, Membership, Peer, group_name
from .peerwatch import PeerWatch

if TYPE_CHECKING:
    from ..config import Config
    from .log import StateLog

log = logging.getLogger("kshim.scaleout")

LIST_GROUPS, OFFSET_FETCH = ApiKey.LIST_GROUPS, ApiKey.OFFSET_FETCH
DESCRIBE_GROUPS, DELETE_GROUPS = ApiKey.DESCRIBE_GROUPS, ApiKey.DELETE_GROUPS
PEER_CLIENT_ID = "kshim-peer"          # ListGroups from another instance: answer with local groups only
PEER_TIMEOUT_S = 5.0


class Runtime(Protocol):
    """What scale-out needs of the coordinator's runtime."""

    def replay(self, records: list) -> None:
        """Feed a loaded partition's records to the coordinator."""

    def unload(self, group_ids: list[str]) -> None:
        """Drop groups served elsewhere (their parked requests answered NOT_COORDINATOR)."""

    def group_ids(self) -> set[str]:
        """The group ids the coordinator holds state of."""


class ScaleOut:
    """`topology`: the proxy's (node ids, their kshim ports, the advertised host); `resume(session,
    slot, req)`: the request path again, for a ListGroups whose peers answered."""

    def __init__(self, runtime: Runtime, state: "StateLog", cfg: "Config", topology, resume: Callable):
        self.runtime, self.state, self.cfg, self.resume = runtime, state, cfg, resume
        self.partitions = state.partitions
        self.me = Peer(topology.advertised_host, cfg.listen_port, cfg.broker_base,
                       tuple(sorted((n, topology.port_for(n)) for n in topology.brokers)))
        self.sm = Membership(group_name(cfg.state_topic), self.partitions, self.me,
                             cfg.scale_out_session_timeout_ms, now_ms())
        self.client = MemberClient(cfg, self.sm, lambda: [(b.host, b.port) for b in topology.brokers.values()]
                                   + cfg.upstream_addresses(), self._assigned)
        self.serving: set[int] = set()
        self.loading: dict[int, asyncio.Task] = {}
        self.owners: dict[int, Peer] = {}
        self._peer_groups: dict[int, list] = {}     # id(slot) -> ListGroups entries of the other instances
        self.peers = PeerWatch()                     # other owners that are gone (connection refused)

    def start(self) -> None:
        log.info("scale-out: joining %s as %s:%d", self.sm.group, self.me.host, self.me.port)
        self.client.start()

    async def stop(self) -> None:
        for task in self.loading.values():
            task.cancel()
        self.peers.stop()
        await self.client.stop()

    # ------------------------------------------------------------------ ownership
    def partition_of(self, group_id: str) -> int:
        return fmt.partition_for(group_id, self.partitions)

    def error_for(self, group_id: str) -> int:
        p = self.partition_of(group_id)
        if p in self.serving:
            return Error.NONE
        return answers.COORDINATOR_LOAD_IN_PROGRESS if p in self.loading else answers.NOT_COORDINATOR

    def owner_of(self, group_id: str) -> Peer | None:
        """The instance that serves the group (None: nobody known yet, or its owner is gone:
        peerwatch.py)."""
        p = self.partition_of(group_id)
        if p in self.serving or p in self.loading:
            return self.me
        owner = self.owners.get(p)
        return None if owner is None or self.peers.is_down(owner.host, owner.port) else owner

    def _assigned(self, a: Assignment) -> None:
        self.owners = {p: o for p, o in a.owners.items() if p not in a.mine}
        self.peers.watch({(o.host, o.port) for o in self.owners.values() if o != self.me})
        held = set(self.serving) | set(self.loading)
        lost, gained = held - a.mine, a.mine - held
        log.info("scale-out: generation %d, serving partitions %s (gained %s, lost %s)", a.generation,
                 sorted(a.mine), sorted(gained), sorted(lost))
        for p in sorted(lost):
            self._unload(p)
        for p in sorted(gained):
            self.loading[p] = asyncio.get_running_loop().create_task(self._load(p, a.generation, a.member_id))

    def _unload(self, p: int) -> None:
        task = self.loading.pop(p, None)
        if task is not None:
            task.cancel()
        self.serving.discard(p)
        self.state.release(p)
        gids = {g for g in self.runtime.group_ids() if self.partition_of(g) == p}
        self.runtime.unload(sorted(gids))
        log.info("scale-out: partition %d moved away (%d groups dropped)", p, len(gids))

    async def _load(self, p: int, generation: int, member_id: str) -> None:
        me = asyncio.current_task()
        while self.loading.get(p) is me:
            t0 = now_ms()
            try:
                records, epoch = await self.state.take(p, generation, member_id, self.me.host, self.me.port)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("scale-out: loading partition %d failed: %s; retrying", p, e)
                await asyncio.sleep(1.0)
                continue
            if self.loading.get(p) is not me:          # lost while loading
                self.state.release(p)
                return
            self.runtime.replay(records)
            del self.loading[p]
            self.serving.add(p)
            log.info("scale-out: serving partition %d (epoch %d, %d records replayed in %d ms)", p, epoch,
                     len(records), now_ms() - t0)
            return

    # ------------------------------------------------------------------ requests
    def route(self, session, slot, req):
        """(answer now, or None; patch for the coordinator's answer, or None)."""
        if slot.api_key == LIST_GROUPS:
            extra = self._peer_groups.pop(id(slot), None)
            if self.loading:
                return answers.refuse(LIST_GROUPS, slot.version, req, answers.COORDINATOR_LOAD_IN_PROGRESS), None
            if not extra:
                return None, None

            def add(body):
                known = {g.group_id for g in body.groups}
                body.groups.extend(g for g in extra if g.group_id not in known)
            return None, add
        keyed = groups_of(slot.api_key, slot.version, req)
        if keyed is None:
            return None, None
        gids, batched = keyed
        errors = {g: e for g in gids if g is not None and (e := self.error_for(g))}
        if not errors:
            return None, None
        if not batched:
            return answers.refuse(slot.api_key, slot.version, req, errors[gids[0]]), None
        return None, lambda body: answers.refuse_entries(slot.api_key, body, errors)

    def list_groups(self, session, slot, req) -> bool:
        """ListGroups on this instance's listing port: its own groups plus every other instance's
        (asked with PEER_CLIENT_ID, so they answer with their own only). False: answer locally now."""
        peers = {o for o in self.owners.values() if o != self.me}
        if session.client_id == PEER_CLIENT_ID or not peers:
            return False
        asyncio.get_running_loop().create_task(self._list_with_peers(session, slot, req, peers))
        return True

    async def _list_with_peers(self, session, slot, req, peers) -> None:
        results = await asyncio.gather(*(self._peer_list(p, slot.version, req) for p in peers),
                                       return_exceptions=True)
        groups = []
        for peer, res in zip(peers, results):
            if isinstance(res, BaseException):
                log.warning("ListGroups from kshim %s:%d failed: %s", peer.host, peer.port, res)
            else:
                groups.extend(res)
        if not session.closed:
            self._peer_groups[id(slot)] = groups
            self.resume(session, slot, req)

    async def _peer_list(self, peer: Peer, version: int, req: ListGroupsRequest) -> list:
        client = await UpstreamClient.connect(self.cfg, peer.host, peer.port, timeout=PEER_TIMEOUT_S)
        client.client_id = PEER_CLIENT_ID
        try:
            v = min(version, client.version_for(LIST_GROUPS, version))
            resp = await client.request(LIST_GROUPS, v, req, timeout=PEER_TIMEOUT_S)
            if resp.error_code:
                raise ConnectionError(f"error {resp.error_code} ({api.API_KEYS.get(LIST_GROUPS)})")
            return list(resp.groups)
        finally:
            client.close()


def groups_of(api_key: int, version: int, req) -> tuple[list[str], bool] | None:
    """(group ids, batched) a request is about; None for requests not keyed by group (ListGroups)."""
    if api_key == DESCRIBE_GROUPS:
        return list(req.groups), True
    if api_key == DELETE_GROUPS:
        return list(req.groups_names), True
    if api_key == OFFSET_FETCH and version >= 8:
        return [g.group_id for g in req.groups], True
    gid = getattr(req, "group_id", None)
    if isinstance(gid, str):
        return [gid], False
    return None
