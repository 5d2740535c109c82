"""The request path of the group APIs kshim answers, from the decoded request to the coordinator.

`handle` is the route (its contract: host.py `Route`; it takes every request it is given). A request
passes these gates, always in this order:
  1. adoption (adoption.py, with adopt_broker_groups): a group kshim does not hold, not asked about
     yet, waits while the broker's coordinator is asked what it holds;
  2. the broker's groups (broker_groups.py): a request naming only share/streams or live groups the
     broker holds goes to the broker; one naming kshim's groups too is split, kshim's part goes on;
  3. group configs, 4. topic metadata: what the coordinator says it needs fetched first
     (`GroupCoordinator.needs`: a consumer group's configs at its first heartbeat, topics kshim has not
     listed yet), fetched by configs.py and topic_refresh.py;
  5. authorization (authz.py, with SASL upstream or `authorizer`: the coordinator sees only the
     authorized part) and scale-out routing (shim/state/ownership.py: a group served elsewhere or
     still loading is answered here);
  6. TxnOffsetCommit: enlisted in its transaction first (transactions.py);
then the coordinator step (runtime.py, which sends the answer once its state records are durable).

The fast path: when no gate waits (the common case: every commit and heartbeat of a known group),
`handle` runs 5 and the coordinator step synchronously. Otherwise one coroutine, `_through_gates`,
awaits the gates in the order above. An answer is changed one way only: `GroupRuntime.amend` (the
broker's entries of a split request, scale-out's refusals, authorization's refusals put back).
ListGroups has its own short path: one port lists (admin clients ask every broker and concatenate),
with the brokers' groups (broker_groups.py) and, with scale-out, the other instances' added.
A malformed request closes the connection, as the broker does (bodies.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from kcodec import api
from kcodec.generated.list_groups import ListGroupsResponse
from kcodec.protocol import ApiKey, Error

from ..state.ownership import PEER_CLIENT_ID
from .bodies import read_or_close
from .find_coordinator import coordinator_node

if TYPE_CHECKING:
    from .adoption import Adoption
    from .authz import AuthzService
    from .broker_groups import BrokerGroups
    from .configs import GroupConfigWatcher
    from .host import Connection, Host, Slot
    from .runtime import GroupRuntime
    from .topic_refresh import TopicRefresher
    from .transactions import Transactions

log = logging.getLogger("kshim.coordinator")

LIST_GROUPS = ApiKey.LIST_GROUPS
TXN_OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT = ApiKey.TXN_OFFSET_COMMIT, ApiKey.CONSUMER_GROUP_HEARTBEAT


class GroupRequests:
    def __init__(self, proxy: "Host", runtime: "GroupRuntime", *, metadata: "TopicRefresher",
                 transactions: "Transactions", authz: "AuthzService | None", broker_groups: "BrokerGroups",
                 configs: "GroupConfigWatcher", adoption: "Adoption | None"):
        self.proxy, self.runtime, self.metadata, self.configs = proxy, runtime, metadata, configs
        self.transactions, self.authz, self.broker_groups, self.adoption = transactions, authz, broker_groups, adoption
        self.scale = None                      # shim.state.ownership.ScaleOut, once scale-out started
        self._tasks: set[asyncio.Task] = set()

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    # ------------------------------------------------------------------ the route
    def handle(self, session: "Connection", slot: "Slot", frame) -> bool:
        """Every group API the coordinator answers; always taken (answered now or later)."""
        req = read_or_close(session, slot, frame)
        if req is None or (self.authz is not None and not self.authz.admitted(session)):
            return True
        if slot.api_key == LIST_GROUPS:
            self._list_groups(session, slot, req)
        elif self._gates_open(slot, req):
            self._decide(session, slot, req, None)
        else:
            self._spawn(self._through_gates(session, slot, req, frame))
        return True

    def _gates_open(self, slot: "Slot", req) -> bool:
        """No gate waits: no group to ask the broker about, none of them the broker's, nothing the
        coordinator needs fetched, no transaction to enlist in."""
        return not (slot.api_key == TXN_OFFSET_COMMIT
                    or (self.adoption is not None and self.adoption.new_groups(slot, req))
                    or self.broker_groups.theirs(slot, req)
                    or self.runtime.coordinator.needs(slot.api_key, slot.version, req))

    async def _through_gates(self, session: "Connection", slot: "Slot", req, frame) -> None:
        """The slow path: the gates awaited in their fixed order, then the same decision."""
        if self.adoption is not None:                                            # 1
            await self.adoption.ask(self.adoption.new_groups(slot, req))
        split = None
        theirs = self.broker_groups.theirs(slot, req)                            # 2
        if theirs:
            taken = await self.broker_groups.split_off(session, slot, req, frame, theirs)
            if taken is None:
                return                         # answered: forwarded whole, or refused
            req, split = taken
        needs = self.runtime.coordinator.needs(slot.api_key, slot.version, req)
        if needs.group_configs:                                                  # 3
            await self.configs.load_quietly(list(needs.group_configs))
        if needs.all_topics or needs.topics:                                     # 4
            try:
                await self.metadata.fetch(needs)
            except Exception as e:  # noqa: BLE001 - upstream unreachable: decided on what kshim knows
                log.warning("metadata refresh for %s failed: %s", api.API_KEYS.get(slot.api_key), e)
        if session.closed:
            return
        if slot.api_key != TXN_OFFSET_COMMIT:
            self._decide(session, slot, req, split)                              # 5
            return
        req = self._authorize_and_route(session, slot, req, split)              # 5
        if req is None:
            return
        if not self.transactions.enlists(req, slot.version):
            self.runtime.handle(session, slot, req)
            return
        if not await self.transactions.enlist(session, slot, req):              # 6
            self.runtime.forget(slot)          # refused (answered), or the connection closed
            return
        markers = self.transactions.markers
        where = await markers.floor(req.group_id)   # (after enlisting: see txn_markers.py)
        if session.closed:
            self.runtime.forget(slot)
            return
        self.runtime.handle(session, slot, req, marker_floor=where[1] if where else -1)
        markers.expect(req.producer_id, req.group_id, where)

    def _decide(self, session: "Connection", slot: "Slot", req, split) -> None:
        """Gate 5, then the coordinator step."""
        req = self._authorize_and_route(session, slot, req, split)
        if req is None:
            return
        regex_filter = None            # the member's TOPIC DESCRIBE right resolves its regex (authorizer)
        if self.authz is not None and slot.api_key == CONSUMER_GROUP_HEARTBEAT:
            regex_filter = self.authz.topic_filter(session)
        self.runtime.handle(session, slot, req, topic_filter=regex_filter)

    def _authorize_and_route(self, session: "Connection", slot: "Slot", req, split):
        """Authorization, then scale-out routing: the request to feed the coordinator, or None when it
        was answered here. The answer's changes: scale-out's, then the split's, then authorization's."""
        authz = self.authz
        if authz is not None:
            req = authz.gate(session, slot, req, self._topic_name)
            if req is None:                    # refused: answered
                return None
        if self.scale is not None:             # groups of state partitions served elsewhere / loading
            early, change = self.scale.route(session, slot, req)
            if early is not None:
                self.runtime.answer(session, slot, early)
                return None
            if change is not None:
                self.runtime.amend(slot, change)
        if split is not None:
            self.runtime.amend(slot, split)
        return req

    # ------------------------------------------------------------------ ListGroups
    def _list_groups(self, session: "Connection", slot: "Slot", req) -> None:
        if self.authz is not None:             # filtered however it is answered (scale-out merges)
            req = self.authz.gate(session, slot, req, None)
        if not self._lists_groups(session):
            self.runtime.answer(session, slot, ListGroupsResponse(error_code=Error.NONE, groups=[]))
        elif session.client_id != PEER_CLIENT_ID:   # another kshim instance asks for its own only
            self._spawn(self._list_with_brokers(session, slot, req))
        elif self.scale is None or not self.scale.list_groups(session, slot, req):
            self.list_locally(session, slot, req)

    async def _list_with_brokers(self, session: "Connection", slot: "Slot", req) -> None:
        await self.broker_groups.list_brokers(slot, req)
        if session.closed:
            return
        if self.scale is None or not self.scale.list_groups(session, slot, req):
            self.list_locally(session, slot, req)   # (else once the other instances answered)

    def list_locally(self, session: "Connection", slot: "Slot", req) -> None:
        """kshim's own listing, with the brokers' groups and (scale-out) the other instances' added."""
        listed = self.broker_groups.listing_patch(slot)
        if self.scale is not None:
            early, change = self.scale.route(session, slot, req)
            if early is not None:
                self.runtime.answer(session, slot, early)
                return
            if change is not None:
                self.runtime.amend(slot, change)
        if listed is not None:
            self.runtime.amend(slot, listed)
        self.runtime.handle(session, slot, req)

    def _lists_groups(self, session: "Connection") -> bool:
        """Admin clients ask every broker and concatenate: only one port lists the groups."""
        node = session.listener.node_id
        return node is None or node == coordinator_node(self.proxy)

    # ------------------------------------------------------------------ helpers
    def _topic_name(self, topic_id) -> str | None:
        info = self.runtime.topics.topic(topic_id)
        return None if info is None else info.name

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
