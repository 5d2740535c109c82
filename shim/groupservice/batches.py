"""Which groups a group request names, and how a batched one is split and its answers merged.

A group id is either kshim's (classic and consumer groups: kshim's coordinator) or the broker's
(share groups, KIP-932, and streams groups, KIP-1071: broker_groups.py). Requests naming one group go
whole to its owner; the batched ones (DescribeGroups, DeleteGroups, OffsetFetch v8+,
ConsumerGroupDescribe, ShareGroupDescribe, StreamsGroupDescribe, DescribeShareGroupOffsets) are split
into one request per owner (and per broker coordinator), and the answers' entries put back in the
order the request named them, as the broker's `GroupCoordinatorService` combines its shards' answers
into one response.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

from kcodec.protocol import ApiKey, Error


class Batch(NamedTuple):
    request_attr: str          # the request's list of groups
    entry_id: str | None       # the request entry's group id attribute (None: entries are ids)
    response_attr: str         # the response's list of per-group entries


BATCHED = {
    ApiKey.DESCRIBE_GROUPS: Batch("groups", None, "groups"),
    ApiKey.DELETE_GROUPS: Batch("groups_names", None, "results"),
    ApiKey.CONSUMER_GROUP_DESCRIBE: Batch("group_ids", None, "groups"),
    ApiKey.SHARE_GROUP_DESCRIBE: Batch("group_ids", None, "groups"),
    ApiKey.STREAMS_GROUP_DESCRIBE: Batch("group_ids", None, "groups"),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: Batch("groups", "group_id", "groups"),
    ApiKey.OFFSET_FETCH: Batch("groups", "group_id", "groups"),      # v8+ (KIP-709)
}
OFFSET_FETCH_BATCHED_MIN = 8

# errors that mean "ask the group's coordinator again" (GroupCoordinatorService: the group's
# __consumer_offsets partition moved or has no leader); kshim retries them instead of answering
RETRY = frozenset({Error.NOT_COORDINATOR, Error.COORDINATOR_NOT_AVAILABLE})


def batch_of(api_key: int, version: int) -> Batch | None:
    if api_key == ApiKey.OFFSET_FETCH and version < OFFSET_FETCH_BATCHED_MIN:
        return None
    return BATCHED.get(api_key)


def group_ids(api_key: int, version: int, req) -> tuple[list[str], Batch | None]:
    """(the group ids a request names, its Batch or None for a single-group request)."""
    batch = batch_of(api_key, version)
    if batch is None:
        gid = getattr(req, "group_id", None)
        return ([gid] if isinstance(gid, str) else []), None
    entries = getattr(req, batch.request_attr) or []
    return [e if batch.entry_id is None else getattr(e, batch.entry_id) for e in entries], batch


def subset(req, batch: Batch, keep: set[str]):
    """A copy of a batched request that names only the groups in `keep`."""
    out = copy.copy(req)
    entries = getattr(req, batch.request_attr) or []
    setattr(out, batch.request_attr,
            [e for e in entries if (e if batch.entry_id is None else getattr(e, batch.entry_id)) in keep])
    return out


def merge_entries(order: list[str], batch: Batch, body, extra: list) -> None:
    """Put `extra` entries into `body` and order all entries as the request named their groups."""
    entries = list(getattr(body, batch.response_attr) or []) + list(extra)
    rank = {g: i for i, g in reversed(list(enumerate(order)))}
    entries.sort(key=lambda e: rank.get(e.group_id, len(order)))
    setattr(body, batch.response_attr, entries)


def error_codes(msg, depth: int = 0):
    """Every error code in a decoded answer (top level, per group, per topic, per partition)."""
    code = getattr(msg, "error_code", None)
    if isinstance(code, int):
        yield code
    if depth >= 3:
        return
    for name in getattr(msg, "__slots__", ()):
        value = getattr(msg, name, None)
        if isinstance(value, list) and value and hasattr(value[0], "__slots__"):
            for item in value:
                yield from error_codes(item, depth + 1)


def needs_retry(msg) -> bool:
    return any(code in RETRY for code in error_codes(msg))
