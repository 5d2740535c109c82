"""Decode-and-rewrite of the few responses that carry broker addresses or version ranges.

Only ApiVersions, Metadata, FindCoordinator and DescribeCluster responses, and the responses that
may name brokers in NodeEndpoints (Produce from v10, KIP-951; ShareFetch and ShareAcknowledge,
KIP-932), pass through here; every other response is forwarded as the broker's bytes. The response
header is kept byte for byte; the body is decoded with the generated codec, changed, and encoded at
the same version (an answer without NodeEndpoints is kept as the broker's bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from kcodec import api
from kcodec.protocol import Error

from .topology import Broker, Topology
from .versions import (API_VERSIONS, DESCRIBE_CLUSTER, FIND_COORDINATOR, METADATA, PRODUCE, SHARE_ACKNOWLEDGE,
                       SHARE_FETCH, advertised_range)

REWRITTEN = frozenset({API_VERSIONS, METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER})
PRODUCE_ENDPOINTS_MIN = 10     # Produce v10+ responses may name brokers (NodeEndpoints, KIP-951)
# The broker fills NodeEndpoints only for partitions answered NOT_LEADER_OR_FOLLOWER (6), and for
# ShareFetch/ShareAcknowledge also FENCED_LEADER_EPOCH (74) (KafkaApis.handleProduceRequest,
# processShareFetchResponse, processShareAcknowledgeResponse): an answer whose bytes hold no such
# int16 anywhere has none and leaves as it came, without decoding.
_NOT_LEADER = b"\x00\x06"
_FENCED_LEADER_EPOCH = Error.FENCED_LEADER_EPOCH.to_bytes(2, "big")
SHARE_ANSWERS = frozenset({SHARE_FETCH, SHARE_ACKNOWLEDGE})

UNSUPPORTED_VERSION = Error.UNSUPPORTED_VERSION
DESCRIBE_CLUSTER_BROKERS = 1  # DescribeCluster v1+ EndpointType: 1 brokers, 2 controllers


def rewritten(api_key: int, version: int) -> bool:
    """Is this response decoded and rewritten (else forwarded as the broker's bytes)?"""
    return (api_key in REWRITTEN or api_key in SHARE_ANSWERS
            or (api_key == PRODUCE and version >= PRODUCE_ENDPOINTS_MIN))


@dataclass
class Rewritten:
    frame: bytes
    learned: list[Broker]


def split_response(api_key: int, version: int, frame) -> tuple[memoryview, memoryview]:
    """(header bytes, body bytes) of a response frame."""
    mv = memoryview(frame)
    # ApiVersions responses always use header v0, even for a version the codec does not know
    hv = 0 if api_key == API_VERSIONS else api.response_header_version(api_key, version)
    _, pos = api.ResponseHeader.decode_from(mv, 0, hv)
    return mv[:pos], mv[pos:]


class Rewriter:
    def __init__(self, topology: Topology, local_versions: dict[int, tuple[int, int]] | None = None):
        self.topology = topology
        # the coordinator's ranges as advertised (Proxy._set_allowed sets them: within the release it answers as)
        self.local_versions = local_versions if local_versions is not None else {}

    def rewrite(self, api_key: int, version: int, frame) -> Rewritten:
        if api_key == PRODUCE:
            frame = bytes(frame)
            if _NOT_LEADER not in frame:
                return Rewritten(frame, [])
        elif api_key in SHARE_ANSWERS:
            frame = bytes(frame)
            if _NOT_LEADER not in frame and _FENCED_LEADER_EPOCH not in frame:
                return Rewritten(frame, [])
        header, body = split_response(api_key, version, frame)
        if api_key == API_VERSIONS:
            return Rewritten(bytes(header) + self._api_versions(version, body), [])
        cls = api.RESPONSES[api_key]
        msg = cls.decode(body, version)
        learned: list[Broker] = []
        if api_key == PRODUCE or api_key in SHARE_ANSWERS:
            if not msg.node_endpoints:
                return Rewritten(frame, [])
            learned = self.topology.learn([Broker(e.node_id, e.host, e.port, e.rack) for e in msg.node_endpoints])
            for e in msg.node_endpoints:
                e.host, e.port = self.topology.advertised_host, self.topology.port_for(e.node_id)
        elif api_key == METADATA:
            seen = [Broker(b.node_id, b.host, b.port, b.rack) for b in msg.brokers]
            learned = self.topology.learn(seen)
            for b in msg.brokers:
                b.host, b.port = self.topology.advertised_host, self.topology.port_for(b.node_id)
        elif api_key == FIND_COORDINATOR:
            if version >= 4:
                for c in msg.coordinators:
                    if c.node_id >= 0 and c.error_code == Error.NONE:
                        c.host, c.port = self.topology.advertised_host, self.topology.port_for(c.node_id)
            elif msg.node_id >= 0 and msg.error_code == Error.NONE:
                msg.host, msg.port = self.topology.advertised_host, self.topology.port_for(msg.node_id)
        elif api_key == DESCRIBE_CLUSTER:
            if version < 1 or msg.endpoint_type == DESCRIBE_CLUSTER_BROKERS:
                seen = [Broker(b.broker_id, b.host, b.port, b.rack) for b in msg.brokers]
                learned = self.topology.learn(seen)
                for b in msg.brokers:
                    b.host, b.port = self.topology.advertised_host, self.topology.port_for(b.broker_id)
        return Rewritten(bytes(header) + msg.encode(version), learned)

    def _api_versions(self, version: int, body) -> bytes:
        cls = api.RESPONSES[API_VERSIONS]
        vmin, vmax = api.VERSIONS[API_VERSIONS]
        # A broker answers a too-new ApiVersions request with a v0 body and UNSUPPORTED_VERSION.
        body_version = version if vmin <= version <= vmax else 0
        try:
            msg = cls.decode(body, body_version)
        except Exception:
            if body_version == 0:
                raise
            body_version = 0
            msg = cls.decode(body, 0)
        keep = []
        for k in msg.api_keys:
            rng = advertised_range(k.api_key, k.min_version, k.max_version, api.VERSIONS, self.local_versions)
            if rng is not None:
                k.min_version, k.max_version = rng
                keep.append(k)
        msg.api_keys = keep
        return msg.encode(body_version)
