"""The wire tester's real transactions (txn_gen.py) without a broker: they come at a modest rate from
their own random stream (a seed keeps every step it had before), follow the protocol a client of
either transactions version sends, end in each of the four ways, and the producer id and epoch a
target answers are what its later requests carry."""

from __future__ import annotations

from collections import Counter

from shim.compat.wirediff.driver import Side
from shim.compat.wirediff.generate import DEFAULT_RANGES, generate
from shim.compat.wirediff.target import Target
from shim.compat.wirediff.txn_gen import (ADD_OFFSETS_TO_TXN, END_TXN, INIT_PRODUCER_ID, OFFSET_FETCH, RANGES,
                                          TXN_OFFSET_COMMIT)

NO_TXN = {k: r for k, r in DEFAULT_RANGES.items() if k not in RANGES}
SEEDS = range(300)


def _transactions(sc) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for s in sc.steps:
        if str(s.get("conn", "")).startswith("p"):
            out.setdefault(s["conn"], []).append(s)
    return out


def _outcome(steps: list[dict]) -> str:
    inits = sum(1 for s in steps if s["api"] == INIT_PRODUCER_ID)
    ends = [s for s in steps if s["api"] == END_TXN]
    return "fence" if inits == 3 else ("commit" if ends[0]["body"]["committed"] else "abort") if ends else "abandon"


def test_a_seed_keeps_its_steps_and_transactions_come_at_a_modest_rate():
    with_txn = 0
    for seed in SEEDS:
        old, new = generate(seed, NO_TXN).to_json()["steps"], generate(seed).to_json()["steps"]
        it = iter(new)
        assert all(any(x == y for y in it) for x in old), seed            # a subsequence
        with_txn += len(new) > len(old)
    assert 0.2 * len(SEEDS) < with_txn < 0.45 * len(SEEDS)


def test_each_transaction_follows_the_client_protocol_of_its_version_and_ends_every_way():
    outcomes = Counter()
    for seed in SEEDS:
        for conn, steps in _transactions(generate(seed)).items():
            apis = [s["api"] for s in steps]
            assert apis[0] == INIT_PRODUCER_ID
            commit = next(s for s in steps if s["api"] == TXN_OFFSET_COMMIT)
            tv2 = commit["v"] >= 5
            assert (ADD_OFFSETS_TO_TXN in apis) != tv2         # v2: the group coordinator enlists
            if not tv2:
                assert apis.index(ADD_OFFSETS_TO_TXN) < apis.index(TXN_OFFSET_COMMIT)
            for s in steps:
                if s["api"] == END_TXN:
                    assert (s["v"] >= 5) == tv2
                if s["api"] == INIT_PRODUCER_ID:
                    assert s["body"]["producerId"] == -1 and s["body"]["transactionalId"] == f"$txn:{conn}"
                else:
                    assert (s["body"]["producerId"], s["body"]["producerEpoch"]) == (f"$pid:{conn}", f"$pepoch:{conn}")
            outcomes[(_outcome(steps), tv2)] += 1
    assert {k for k, n in outcomes.items() if n >= 3} == {(o, v) for o in ("commit", "abort", "fence", "abandon")
                                                         for v in (False, True)}


def test_require_stable_fetches_surround_each_outcome():
    sc = next(sc for sc in map(generate, SEEDS) if _transactions(sc))
    fetches = [s for s in sc.steps if s.get("api") == OFFSET_FETCH and s["body"].get("requireStable") is True
               and s["conn"] == "adm" and s["v"] >= 7]
    assert len(fetches) >= 2 * len(_transactions(sc))


def test_the_producer_id_and_epoch_come_from_the_targets_answers():
    side = Side(Target("a", "127.0.0.1:1", "kwrun"), generate(0))
    assert side.lookup("pid", "p1") == -1 and side.lookup("pepoch", "p1") == -1
    side.sc.steps[:0] = [{"conn": "p1", "api": INIT_PRODUCER_ID, "v": 4, "body": {}},
                         {"conn": "p1", "api": END_TXN, "v": 5, "body": {}},
                         {"conn": "p1", "api": INIT_PRODUCER_ID, "v": 4, "body": {}}]
    side.events.clear()
    side.answered(0, ("ok", {"errorCode": 0, "producerId": 4000, "producerEpoch": 2}))
    assert (side.lookup("pid", "p1"), side.lookup("pepoch", "p1")) == (4000, 2)
    side.answered(1, ("ok", {"errorCode": 0, "producerId": 4000, "producerEpoch": 3}))   # v2 bumps the epoch
    assert side.lookup("pepoch", "p1") == 3
    side.answered(2, ("ok", {"errorCode": 51, "producerId": -1, "producerEpoch": -1}))   # CONCURRENT_TRANSACTIONS
    assert (side.lookup("pid", "p1"), side.lookup("pepoch", "p1")) == (4000, 3)
    assert side.lookup("txn", "p1") == side.group("txnp1")
