"""The request path of the group APIs kshim answers: decode -> authenticate -> (topic metadata) ->
authorize -> route (scale-out) -> (enlist in the transaction) -> coordinator -> encode.

- decode: the request body as the broker reads it (bodies.py); a malformed one closes the
  connection, as the broker does.
- authentication/authorization (authz.py, only with SASL upstream or `authorizer`): a group request
  before SASL authentication closes the connection (`admitted`); the ACLs are checked in `feed`,
  after any metadata refresh (topic ids resolve to names); the coordinator sees only the authorized
  part, and `GroupRuntime.finish` puts the refused entries back into its answer.
- topic metadata (topic_refresh.py): a request naming topics kshim has not seen waits for a
  Metadata refresh first.
- the broker's groups (broker_groups.py): a request naming share or streams groups the broker holds
  goes to the broker (split when it names kshim's groups too).
- ListGroups: only one port lists the groups (admin clients ask every broker and concatenate); the
  brokers' groups are added (broker_groups.py), and with scale-out the other instances' groups
  (shim/state/ownership.py).
- route: with scale-out, requests for groups served elsewhere or still loading are answered here
  (shim/error_answers.py), batched ones patched.
- TxnOffsetCommit is enlisted in the transaction first (transactions.py).
- The coordinator step and the answers: runtime.py (which holds them until their state
  records are durable).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable

from kcodec import api
from kcodec.generated.list_groups import ListGroupsResponse
from kcodec.protocol import ApiKey, Error

from ..state.ownership import PEER_CLIENT_ID
from .bodies import read_or_close
from .find_coordinator import coordinator_node

if TYPE_CHECKING:
    from .host import Connection, Host, Slot
    from .authz import AuthzService
    from .broker_groups import BrokerGroups
    from .runtime import GroupRuntime
    from .topic_refresh import TopicRefresher
    from .transactions import Transactions

log = logging.getLogger("kshim.coordinator")

LIST_GROUPS = ApiKey.LIST_GROUPS
TXN_OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT = ApiKey.TXN_OFFSET_COMMIT, ApiKey.CONSUMER_GROUP_HEARTBEAT


class GroupRequests:
    def __init__(self, proxy: "Host", runtime: "GroupRuntime", metadata: "TopicRefresher",
                 transactions: "Transactions", authz: "AuthzService | None", broker_groups: "BrokerGroups"):
        self.proxy, self.runtime, self.metadata = proxy, runtime, metadata
        self.transactions, self.authz, self.broker_groups = transactions, authz, broker_groups
        self.scale = None                      # shim.state.ownership.ScaleOut when scale_out is on
        self.adoption = None                   # adoption.py's Adoption (adopt_broker_groups, no scale_out)
        self.configs = None                    # configs.py's GroupConfigWatcher (set by GroupService)

    def handle(self, session: "Connection", slot: "Slot", frame) -> bool:
        """The routing table's handler for every group API the coordinator answers."""
        req = read_or_close(session, slot, frame)
        if req is None:
            return True
        authz = self.authz
        if authz is not None:
            if not authz.admitted(session):
                return True
            if slot.api_key == LIST_GROUPS:    # filtered however it is answered (scale-out merges)
                req = authz.gate(session, slot, req, None)
        if slot.api_key == LIST_GROUPS:
            if not self._lists_groups(session):
                self.runtime.answer(session, slot, ListGroupsResponse(error_code=Error.NONE, groups=[]))
                return True
            if session.client_id != PEER_CLIENT_ID:   # another kshim instance asks for its own only
                asyncio.get_running_loop().create_task(self._list_with_brokers(session, slot, req))
                return True
            return self._list(session, slot, req)
        return self.route_group(session, slot, req, frame)

    def route_group(self, session: "Connection", slot: "Slot", req, frame) -> bool:
        """Adoption first (a group the broker held: adoption.py), then the broker's groups, then kshim's."""
        if self.adoption is not None and self.adoption.holds_back(session, slot, req, frame, self.route_group):
            return True                        # taken up again once the broker was asked
        if self.broker_groups.takes(session, slot, req, frame, self.feed):
            return True                        # the broker's groups (split: kshim's part comes back)
        if self.configs is not None and self.configs.needs(slot.api_key, req):
            asyncio.get_running_loop().create_task(self._after_group_configs(session, slot, req))
            return True                        # a group's first heartbeat: its broker configs first
        return self._after_routing(session, slot, req)

    async def _after_group_configs(self, session: "Connection", slot: "Slot", req) -> None:
        await self.configs.load_quietly([req.group_id])
        if not session.closed:
            self._after_routing(session, slot, req)

    def _after_routing(self, session: "Connection", slot: "Slot", req) -> bool:
        if self.metadata.needs(self.runtime.coordinator, slot.api_key, slot.version, req):
            asyncio.get_running_loop().create_task(self._feed_after_metadata(session, slot, req))
            return True
        self.feed(session, slot, req)
        return True

    def _list(self, session: "Connection", slot: "Slot", req) -> bool:
        if self.scale is not None and self.scale.list_groups(session, slot, req):
            return True                        # answered once the other instances answered
        self.feed(session, slot, req)
        return True

    async def _list_with_brokers(self, session: "Connection", slot: "Slot", req) -> None:
        await self.broker_groups.list_brokers(slot, req)
        if not session.closed:
            self._list(session, slot, req)

    def feed(self, session: "Connection", slot: "Slot", req, extra: Callable | None = None) -> None:
        """The decoded request from authorization on (also the way back in after a wait: metadata,
        the other instances' ListGroups, the broker's part of a split request: `extra` patches the
        answer)."""
        runtime = self.runtime
        if slot.api_key == LIST_GROUPS:
            extra = self.broker_groups.listing_patch(slot)
        if self.authz is not None and slot.api_key != LIST_GROUPS:
            req = self.authz.gate(session, slot, req, self._topic_name)
            if req is None:                    # refused: answered
                return
        patch = None
        if self.scale is not None:             # groups of state partitions served elsewhere / loading
            early, patch = self.scale.route(session, slot, req)
            if early is not None:
                return runtime.answer(session, slot, early)
        if extra is not None:
            patch = both(patch, extra)
        if slot.api_key == TXN_OFFSET_COMMIT and self.transactions.enlists(req, slot.version):
            asyncio.get_running_loop().create_task(
                self.transactions.enlist_then_handle(session, slot, req, patch))
            return
        regex_filter = None            # the member's TOPIC DESCRIBE right resolves its regex (authorizer)
        if self.authz is not None and slot.api_key == CONSUMER_GROUP_HEARTBEAT:
            regex_filter = self.authz.topic_filter(session)
        runtime.handle(session, slot, req, patch, topic_filter=regex_filter)

    def _lists_groups(self, session: "Connection") -> bool:
        """Admin clients ask every broker and concatenate: only one port lists the groups."""
        node = session.listener.node_id
        return node is None or node == coordinator_node(self.proxy)

    def _topic_name(self, topic_id) -> str | None:
        info = self.runtime.topics.topic(topic_id)
        return None if info is None else info.name

    async def _feed_after_metadata(self, session: "Connection", slot: "Slot", req) -> None:
        try:
            await self.metadata.refresh_for(self.runtime.coordinator, slot.api_key, slot.version, req)
        except Exception as e:  # upstream unreachable: answer as the broker would when it cannot tell
            log.warning("metadata refresh for %s failed: %s", api.API_KEYS.get(slot.api_key), e)
        if not session.closed:
            self.feed(session, slot, req)


def both(first: Callable | None, second: Callable | None) -> Callable | None:
    """One answer patch applying `first` then `second` (either may be None)."""
    if first is None or second is None:
        return first or second

    def patch(body):
        first(body)
        second(body)
    return patch
