"""The ApiVersions kshim advertises: the broker's ranges, shaped by what kshim can carry.

Rules, per api key the broker advertises:
- keys the codec does not know are dropped (a client must never send kshim what it cannot parse);
- APIs kshim decodes (ApiVersions, Metadata, FindCoordinator, DescribeCluster, and the group APIs
  its coordinator answers) get the intersection of the broker's and the codec's range;
- pass-through APIs keep the broker's minimum (broker quirks such as Produce min 0, KAFKA-18659,
  which librdkafka needs for compression) and are capped at the codec's maximum;
- Fetch is capped at v15: from Fetch v16 (KIP-951) responses can carry broker addresses
  (NodeEndpoints), and Fetch responses (records) stay byte pass-through. Produce is not capped:
  a broker that finalizes transaction.version 2 (KIP-890, Kafka 4's default) must offer Produce
  v12+, which clients then use without AddPartitionsToTxn (franz-go, the Java client); a Produce
  answer is small, so from v10 it is decoded and its NodeEndpoints, when present, rewritten;
- share-group and streams-group APIs are dropped: kshim's coordinator does not own those groups,
  and ShareFetch/ShareAcknowledge responses also carry broker addresses.
"""

from __future__ import annotations

from kcodec.protocol import ApiKey

from ..coordinator.dispatch import VERSIONS as COORDINATOR_VERSIONS

PRODUCE, FETCH, METADATA = ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA
FIND_COORDINATOR = ApiKey.FIND_COORDINATOR
API_VERSIONS, DESCRIBE_CLUSTER = ApiKey.API_VERSIONS, ApiKey.DESCRIBE_CLUSTER

VERSION_CAPS = {FETCH: 15}

DECODED = {API_VERSIONS, METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER}

# Group APIs: the ones kshim's coordinator answers (its dispatch table).
GROUP_APIS = frozenset(COORDINATOR_VERSIONS)

DROPPED_PREFIXES = ("Share", "StreamsGroup", "DescribeShareGroup", "AlterShareGroup", "DeleteShareGroup",
                    "InitializeShareGroup", "ReadShareGroup", "WriteShareGroup")


def advertised_range(api_key: int, broker_min: int, broker_max: int,
                     codec_versions: dict[int, tuple[int, int]], api_names: dict[int, str],
                     local_versions: dict[int, tuple[int, int]] | None = None) -> tuple[int, int] | None:
    """The (min, max) kshim advertises for one api key, or None to drop it."""
    if api_key not in codec_versions:
        return None
    name = api_names.get(api_key, "")
    if name.startswith(DROPPED_PREFIXES):
        return None
    cmin, cmax = codec_versions[api_key]
    if local_versions and api_key in local_versions:
        # answered by kshim itself: kshim's own range, clipped to what the codec carries
        lmin, lmax = local_versions[api_key]
        lo, hi = max(lmin, cmin), min(lmax, cmax)
    elif api_key in DECODED or api_key in GROUP_APIS:
        lo, hi = max(broker_min, cmin), min(broker_max, cmax)
    else:
        lo, hi = broker_min, min(broker_max, cmax)
    hi = min(hi, VERSION_CAPS.get(api_key, hi))
    if lo > hi:
        return None
    return lo, hi
