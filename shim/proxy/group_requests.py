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
- ListGroups: only one port lists the groups (admin clients ask every broker and concatenate); with
  scale-out the other instances' groups are added (shim/state/ownership.py).
- route: with scale-out, requests for groups served elsewhere or still loading are answered here
  (shim/error_answers.py), batched ones patched.
- TxnOffsetCommit is enlisted in the transaction first (transactions.py).
- The coordinator step and the answers: group_runtime.py (which holds them until their state
  records are durable).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from kcodec import api
from kcodec.generated.list_groups import ListGroupsResponse
from kcodec.protocol import ApiKey, Error

from .bodies import read_or_close
from .find_coordinator import coordinator_node

if TYPE_CHECKING:
    from .authz import AuthzService
    from .group_runtime import GroupRuntime
    from .server import Proxy
    from .session import Session, Slot
    from .topic_refresh import TopicRefresher
    from .transactions import Transactions

log = logging.getLogger("kshim.coordinator")

LIST_GROUPS = ApiKey.LIST_GROUPS
TXN_OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT = ApiKey.TXN_OFFSET_COMMIT, ApiKey.CONSUMER_GROUP_HEARTBEAT


class GroupRequests:
    def __init__(self, proxy: "Proxy", runtime: "GroupRuntime", metadata: "TopicRefresher",
                 transactions: "Transactions", authz: "AuthzService | None"):
        self.proxy, self.runtime, self.metadata = proxy, runtime, metadata
        self.transactions, self.authz = transactions, authz
        self.scale = None                      # shim.state.ownership.ScaleOut when scale_out is on

    def handle(self, session: "Session", slot: "Slot", frame) -> bool:
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
        if slot.api_key == LIST_GROUPS and not self._lists_groups(session):
            self.runtime.answer(session, slot, ListGroupsResponse(error_code=Error.NONE, groups=[]))
            return True
        if slot.api_key == LIST_GROUPS and self.scale is not None and self.scale.list_groups(session, slot, req):
            return True                        # answered once the other instances answered
        if self.metadata.needs(self.runtime.coordinator, slot.api_key, slot.version, req):
            asyncio.get_running_loop().create_task(self._feed_after_metadata(session, slot, req))
            return True
        self.feed(session, slot, req)
        return True

    def feed(self, session: "Session", slot: "Slot", req) -> None:
        """The decoded request from authorization on (also the way back in after a wait: metadata,
        the other instances' ListGroups)."""
        runtime = self.runtime
        if self.authz is not None and slot.api_key != LIST_GROUPS:
            req = self.authz.gate(session, slot, req, self._topic_name)
            if req is None:                    # refused: answered
                return
        patch = None
        if self.scale is not None:             # groups of state partitions served elsewhere / loading
            early, patch = self.scale.route(session, slot, req)
            if early is not None:
                return runtime.answer(session, slot, early)
        if slot.api_key == TXN_OFFSET_COMMIT and self.transactions.enlists(req):
            asyncio.get_running_loop().create_task(
                self.transactions.enlist_then_handle(session, slot, req, patch))
            return
        regex_filter = None            # the member's TOPIC DESCRIBE right resolves its regex (authorizer)
        if self.authz is not None and slot.api_key == CONSUMER_GROUP_HEARTBEAT:
            regex_filter = self.authz.topic_filter(session)
        runtime.handle(session, slot, req, patch, topic_filter=regex_filter)

    def _lists_groups(self, session: "Session") -> bool:
        """Admin clients ask every broker and concatenate: only one port lists the groups."""
        node = session.listener.node_id
        return node is None or node == coordinator_node(self.proxy)

    def _topic_name(self, topic_id) -> str | None:
        info = self.runtime.topics.topic(topic_id)
        return None if info is None else info.name

    async def _feed_after_metadata(self, session: "Session", slot: "Slot", req) -> None:
        try:
            await self.metadata.refresh_for(self.runtime.coordinator, slot.api_key, slot.version, req)
        except Exception as e:  # upstream unreachable: answer as the broker would when it cannot tell
            log.warning("metadata refresh for %s failed: %s", api.API_KEYS.get(slot.api_key), e)
        if not session.closed:
            self.feed(session, slot, req)
