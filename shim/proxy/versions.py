"""The ApiVersions kshim advertises: the broker's ranges, shaped by what kshim can carry.

Rules, per api key the broker advertises:
- keys the codec does not know are dropped (a client must never send kshim what it cannot parse);
- APIs kshim decodes (ApiVersions, Metadata, FindCoordinator, DescribeCluster) get the intersection of
  the broker's and the codec's range; the group APIs its coordinator answers the intersection of the
  broker's, the codec's and the coordinator's (a broker of an older release offers fewer versions:
  kshim offers no more than it, and answers those as that release does);
- pass-through APIs keep the broker's minimum (broker quirks such as Produce min 0, KAFKA-18659,
  which librdkafka needs for compression) and are capped at the codec's maximum;
- Fetch is capped at v15: from Fetch v16 (KIP-951) responses can carry broker addresses
  (NodeEndpoints), and Fetch responses (records) stay byte pass-through. Produce is not capped:
  a broker that finalizes transaction.version 2 (KIP-890, Kafka 4's default) must offer Produce
  v12+, which clients then use without AddPartitionsToTxn (franz-go, the Java client); a Produce
  answer is small, so from v10 it is decoded and its NodeEndpoints, when present, rewritten;
- share-group and streams-group APIs (KIP-932, KIP-1071) are the broker's groups' and pass through
  (shim/groupservice/broker_groups.py routes them to the group's coordinator; ShareFetch/ShareAcknowledge
  answers are rewritten when they name brokers): the intersection of the broker's and the codec's
  range, as kshim decodes them.
"""

from __future__ import annotations

from kcodec import api
from kcodec.frames import response_header
from kcodec.generated.api_versions import ApiVersion, ApiVersionsResponse
from kcodec.protocol import ApiKey, Error

from ..coordinator.dispatch import VERSIONS as COORDINATOR_VERSIONS

PRODUCE, FETCH, METADATA = ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA
FIND_COORDINATOR = ApiKey.FIND_COORDINATOR
API_VERSIONS, DESCRIBE_CLUSTER = ApiKey.API_VERSIONS, ApiKey.DESCRIBE_CLUSTER

VERSION_CAPS = {FETCH: 15}

SHARE_FETCH, SHARE_ACKNOWLEDGE = ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE
SHARE_AND_STREAMS = frozenset({ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, SHARE_FETCH, SHARE_ACKNOWLEDGE,
                               ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, ApiKey.ALTER_SHARE_GROUP_OFFSETS,
                               ApiKey.DELETE_SHARE_GROUP_OFFSETS, ApiKey.STREAMS_GROUP_HEARTBEAT,
                               ApiKey.STREAMS_GROUP_DESCRIBE, ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE})

DECODED = {API_VERSIONS, METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER, *SHARE_AND_STREAMS}

API_VERSIONS_RANGE = api.VERSIONS[API_VERSIONS]     # before the broker's ranges are known


def too_new_api_versions(corr: int, allowed: dict[int, tuple[int, int]]) -> bytes:
    """The answer (header v0 + body) to an ApiVersions request newer than kshim advertises, as the broker
    answers one newer than it knows (KafkaApis.handleApiVersionsRequest -> ApiVersionsRequest
    .getErrorResponse): UNSUPPORTED_VERSION in a v0 body listing only ApiVersions' own range, so the
    client retries at the newest version both sides know. Never forwarded: a broker that knows that
    version would answer in a body kshim cannot read (session.py answers it in request order)."""
    lo, hi = allowed.get(API_VERSIONS, API_VERSIONS_RANGE)
    body = ApiVersionsResponse(error_code=Error.UNSUPPORTED_VERSION,
                               api_keys=[ApiVersion(api_key=API_VERSIONS, min_version=lo, max_version=hi)])
    return response_header(corr, 0) + body.encode(0)


# Group APIs: the ones kshim's coordinator answers (its dispatch table).
GROUP_APIS = frozenset(COORDINATOR_VERSIONS)


def advertised_range(api_key: int, broker_min: int, broker_max: int,
                     codec_versions: dict[int, tuple[int, int]],
                     local_versions: dict[int, tuple[int, int]] | None = None) -> tuple[int, int] | None:
    """The (min, max) kshim advertises for one api key, or None to drop it."""
    if api_key not in codec_versions:
        return None
    cmin, cmax = codec_versions[api_key]
    if local_versions and api_key in local_versions:
        # answered by kshim itself: kshim's own range, clipped to what the codec carries and to the
        # upstream broker's, so a client sees the versions a broker of the upstream's release offers
        # (TxnOffsetCommit 0-5 and DeleteGroups 0-2 before Kafka 4.4, OffsetCommit 2-9 on 3.9, ...)
        lmin, lmax = local_versions[api_key]
        lo, hi = max(lmin, cmin, broker_min), min(lmax, cmax, broker_max)
    elif api_key in DECODED or api_key in GROUP_APIS:
        lo, hi = max(broker_min, cmin), min(broker_max, cmax)
    else:
        lo, hi = broker_min, min(broker_max, cmax)
    hi = min(hi, VERSION_CAPS.get(api_key, hi))
    if lo > hi:
        return None
    return lo, hi
