"""Real transactions in a wire scenario: a transactional producer initialises (InitProducerId), sends
offsets for one of the scenario's groups (TxnOffsetCommit, after AddOffsetsToTxn below v5) and then
commits, aborts, is fenced by a new InitProducerId of its transactional id, or is abandoned (its
transaction still open when the scenario ends). RequireStable OffsetFetches of the group follow, so
the pending offsets (UNSTABLE_OFFSET_COMMIT) and each outcome are compared; kshim learns the outcome
from the client's EndTxn or InitProducerId, or from the transaction's markers
(shim/groupservice/txn_markers.py).

Transactions v2 (KIP-890: TxnOffsetCommit v5 and EndTxn v5, no AddOffsetsToTxn) when both targets
have EndTxn v5, else or by chance v1. Everything here draws from its own random stream
(`{seed}/txn`) and its steps are slotted in between the scenario's (groups_gen.slot_in), so a
seed keeps every step it had before."""

from __future__ import annotations

import random

from kcodec.protocol import ApiKey

from .groups_gen import slot_in

INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN = ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_OFFSETS_TO_TXN
END_TXN, TXN_OFFSET_COMMIT, OFFSET_FETCH = ApiKey.END_TXN, ApiKey.TXN_OFFSET_COMMIT, ApiKey.OFFSET_FETCH
RANGES = {INIT_PRODUCER_ID: (0, 5), ADD_OFFSETS_TO_TXN: (0, 4), END_TXN: (0, 5)}
RATE = 0.3                        # share of seeds with transactions
TV2_MIN = 5                       # EndTxn / TxnOffsetCommit v5: transactions v2
REQUIRE_STABLE_MIN = 7            # OffsetFetch v7+
MARKERS_MS = 300                  # the broker writes markers just after EndTxn answers
OUTCOMES = {"commit": 3, "abort": 2, "fence": 2, "abandon": 2}


class TxnGen:
    def __init__(self, gen):
        self.g = gen
        self.r = random.Random(f"{gen.sc.seed}/txn")
        self.steps: list[dict] = []

    def pick(self, *options):
        return self.r.choice(options)

    def step(self, conn: str, api_key: int, body: dict, v: int) -> None:
        self.steps.append({"conn": conn, "api": int(api_key), "v": v, "body": body, "pipe": False})

    def version(self, api_key: int, lo: int = 0, hi: int = 99) -> int:
        a, b = self.g.ranges[api_key]
        return self.r.randint(max(a, lo), min(b, hi))

    def add(self) -> None:
        ranges = self.g.ranges
        if any(k not in ranges for k in (*RANGES, TXN_OFFSET_COMMIT, OFFSET_FETCH)) or self.r.random() >= RATE:
            return
        if ranges[OFFSET_FETCH][1] < REQUIRE_STABLE_MIN:
            return
        groups = sorted({m["group"] for m in self.g.sc.members.values()} | {"g3"})
        for n in range(1, self.r.randint(1, 2) + 1):
            self.transaction(f"p{n}", self.pick(*groups))
        slot_in(self.g.sc.steps, self.steps, self.r)

    def transaction(self, conn: str, group: str) -> None:
        tv2 = self.g.ranges[END_TXN][1] >= TV2_MIN and self.r.random() < 0.6
        ident = {"transactionalId": f"$txn:{conn}", "producerId": f"$pid:{conn}", "producerEpoch": f"$pepoch:{conn}"}
        init = {"transactionalId": f"$txn:{conn}", "transactionTimeoutMs": 60000, "producerId": -1,
                "producerEpoch": -1}
        self.step(conn, INIT_PRODUCER_ID, init, self.version(INIT_PRODUCER_ID, lo=TV2_MIN if tv2 else 0))
        if not tv2:
            self.step(conn, ADD_OFFSETS_TO_TXN, dict(ident, groupId=f"$group:{group}"),
                      self.version(ADD_OFFSETS_TO_TXN))
        self.step(conn, TXN_OFFSET_COMMIT, dict(
            ident, groupId=f"$group:{group}", generationIdOrMemberEpoch=-1, memberId="", groupInstanceId=None,
            topics=[{"name": "$topic:t1", "partitions": [{
                "partitionIndex": 0, "committedOffset": self.r.randint(0, 9), "committedLeaderEpoch": -1,
                "committedMetadata": ""}]}]), TV2_MIN if tv2 else self.r.randint(0, 3))
        self.fetch(group)
        outcome = self.r.choices(list(OUTCOMES), list(OUTCOMES.values()))[0]
        if outcome in ("commit", "abort"):
            self.step(conn, END_TXN, dict(ident, committed=outcome == "commit"),
                      self.version(END_TXN, lo=TV2_MIN) if tv2 else self.version(END_TXN, hi=TV2_MIN - 1))
        elif outcome == "fence":     # the first answer is CONCURRENT_TRANSACTIONS while the abort completes
            self.step(conn, INIT_PRODUCER_ID, init, self.version(INIT_PRODUCER_ID))
            self.steps.append({"sleep": MARKERS_MS})
            self.step(conn, INIT_PRODUCER_ID, init, self.version(INIT_PRODUCER_ID))
        if outcome != "abandon":
            self.steps.append({"sleep": MARKERS_MS})
        self.fetch(group)

    def fetch(self, group: str) -> None:
        topics = [{"name": "$topic:t1", "topicId": "$topicid:t1", "partitionIndexes": [0]}]
        self.step("adm", OFFSET_FETCH, {
            "groupId": f"$group:{group}", "topics": topics, "requireStable": True,
            "groups": [{"groupId": f"$group:{group}", "memberId": None, "memberEpoch": -1, "topics": topics}]},
            self.version(OFFSET_FETCH, lo=REQUIRE_STABLE_MIN))
