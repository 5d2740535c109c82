"""Produce is advertised at the broker's versions (KIP-890 transactions v2 need v12+), so a Produce
answer from v10 may name brokers (KIP-951 NodeEndpoints): those are rewritten to kshim's addresses
and learned; an answer without them leaves as the broker's bytes."""

from __future__ import annotations

import uuid

from kcodec.generated.produce import (LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse, ProduceResponse,
                                      TopicProduceResponse)
from kcodec.generated.response_header import ResponseHeader
from shim.proxy.rewrite import Rewriter, rewritten, split_response
from shim.proxy.topology import Broker, Topology
from shim.proxy.versions import advertised_range

NOT_LEADER = 6
TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def _frame(version: int, body: ProduceResponse) -> bytes:
    return ResponseHeader(correlation_id=7).encode(1) + body.encode(version)


def _answer(endpoints) -> ProduceResponse:
    part = PartitionProduceResponse(index=0, error_code=NOT_LEADER if endpoints else 0, base_offset=-1,
                                    current_leader=LeaderIdAndEpoch(leader_id=2, leader_epoch=5))
    return ProduceResponse(responses=[TopicProduceResponse(topic_id=TOPIC_ID, partition_responses=[part])],
                           node_endpoints=endpoints)


def test_node_endpoints_in_a_produce_answer_name_kshim():
    topo = Topology(broker_base=9093, advertised_host="127.0.0.1")
    topo.update([Broker(1, "10.0.0.1", 9092)])
    frame = _frame(13, _answer([NodeEndpoint(node_id=2, host="10.0.0.2", port=9092, rack="r2")]))
    out = Rewriter(topo).rewrite(0, 13, frame)
    header, body = split_response(0, 13, out.frame)
    assert bytes(header) == frame[:len(header)]
    msg = ProduceResponse.decode(body, 13)
    assert [(e.node_id, e.host, e.port, e.rack) for e in msg.node_endpoints] == [(2, "127.0.0.1", 9095, "r2")]
    assert msg.responses[0].partition_responses[0].current_leader.leader_id == 2
    assert out.learned == [Broker(2, "10.0.0.2", 9092, "r2")] and topo.upstream_of(2).host == "10.0.0.2"


def test_a_produce_answer_without_endpoints_is_the_brokers_bytes():
    topo = Topology(broker_base=9093, advertised_host="127.0.0.1")
    frame = _frame(12, _answer([]))
    out = Rewriter(topo).rewrite(0, 12, frame)
    assert out.frame == frame and out.learned == []


def test_which_produce_answers_are_read():
    assert not rewritten(0, 9) and rewritten(0, 10) and rewritten(0, 13)
    assert not rewritten(1, 17)                             # Fetch stays pass-through, capped at v15
    versions = {0: (3, 13), 1: (4, 18)}
    assert advertised_range(0, 0, 13, versions) == (0, 13)
    assert advertised_range(1, 4, 18, versions) == (4, 15)


def test_an_answer_without_a_not_leader_error_is_not_decoded(monkeypatch):
    """No int16 6 in the bytes: no partition is NOT_LEADER_OR_FOLLOWER, so no NodeEndpoints to rewrite."""
    topo = Topology(broker_base=9093, advertised_host="127.0.0.1")
    ok = _frame(13, _answer([]))
    assert b"\x00\x06" not in ok
    monkeypatch.setattr(ProduceResponse, "decode", classmethod(lambda *a, **k: 1 / 0))
    assert Rewriter(topo).rewrite(0, 13, memoryview(ok)).frame == ok
