"""Turning what the proxy queued into trace records (runs on the writer thread, never on the loop).

The proxy queues raw items (a clock reading, the connection, the direction, the header fields it
already peeked and, only where a record needs it, the frame bytes). Here they become flat dicts:

    type        "frame" | "event" | "conn_open" | "upstream_open" | "conn_close" | "trace_start"
                | "dropped" | "trace_stop"
    ts_ns       time.monotonic_ns() when kshim saw the frame / the event
    wall_ms     wall-clock milliseconds (derived from ts_ns and one anchor per file)
    conn        connection id (client side and upstream side share it), peer, listener, upstream
    dir         client->kshim | kshim->upstream | upstream->kshim | kshim->client
    client_id, client_sw, client_sw_version   (software from the connection's ApiVersions v3+)
    api_key, api, api_version, corr, size     (size = frame bytes without the length prefix)
    group, member, instance, generation, epoch, error_codes   promoted from the body (for filtering)
    groups      the group ids of a share/streams describe naming more than one group
    body        the decoded message, Kafka's JSON form (`to_json`), secrets redacted
    batches     Produce requests / Fetch responses: one dict per record batch header
    decode_error  when the body could not be decoded (the frame is still recorded)
"""

from __future__ import annotations

import base64
import re
import struct

from kcodec import api
from kcodec.frames import request_body_offset
from kcodec.protocol import ApiKey
from kcodec.record_types import LOG_OVERHEAD, Compression

from ..coordinator.dispatch import VERSIONS as COORDINATOR_VERSIONS
from . import share_streams as SS

PRODUCE, FETCH, METADATA, API_VERSIONS = ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA, ApiKey.API_VERSIONS
FIND_COORDINATOR, DESCRIBE_CLUSTER = ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_CLUSTER
SASL_HANDSHAKE, SASL_AUTHENTICATE = ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE
# the APIs kshim's coordinator answers, and FindCoordinator (it names the group too)
GROUP_APIS = frozenset(COORDINATOR_VERSIONS) | {FIND_COORDINATOR}
# bodies decoded whatever `trace_bodies` says: the group APIs, the topology APIs, SASL (redacted)
DECODED = GROUP_APIS | {METADATA, API_VERSIONS, DESCRIBE_CLUSTER, SASL_HANDSHAKE, SASL_AUTHENTICATE}
# share (KIP-932) and streams (KIP-1071) groups, which the broker coordinates: decoded too (share_streams.py)
DECODED |= SS.SHARE_APIS | SS.STREAMS_APIS

C2K, K2U, U2K, K2C = 0, 1, 2, 3
DIRECTIONS = ("client->kshim", "kshim->upstream", "upstream->kshim", "kshim->client")
REQUEST_DIRS = (True, True, False, False)

SECRET_KEY = re.compile(r"password|secret|token|auth_?bytes|hmac|salt|credential", re.IGNORECASE)
# keys whose values may be logged although the name matches (they carry no secret)
NOT_SECRET = frozenset({"tokenId", "expiryTimestampMs", "maxTimestampMs", "tokenRequesterPrincipalName",
                        "tokens", "owners", "renewers"})

_PROMOTE = (("groupId", "group"), ("memberId", "member"), ("groupInstanceId", "instance"),
            ("generationId", "generation"), ("generationIdOrMemberEpoch", "generation"),
            ("memberEpoch", "epoch"), ("instanceId", "instance"))

# v2 record batch header: baseOffset .. recordsCount (61 bytes); see kcodec.records
_BATCH_HEAD = struct.Struct(">qiibIhiqqqhii")
_BATCH_MIN = 61
_CODECS = {c.value: c.name.lower() for c in Compression}


def redact(value, key: str = ""):
    """A copy of a JSON value with every secret-named field replaced by a size note."""
    if isinstance(value, dict):
        return {k: (_hidden(v) if SECRET_KEY.search(k) and k not in NOT_SECRET else redact(v, k))
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    return value


def _hidden(v) -> str:
    if isinstance(v, str):
        try:
            n = len(base64.b64decode(v, validate=True))
        except ValueError:
            n = len(v)
        return f"<redacted {n} bytes>"
    return "<redacted>" if v is not None else None


def batch_headers(records, topic: str | None = None, partition: int | None = None,
                  out: list | None = None) -> list[dict]:
    """The v2 record batch headers of a records blob (no record is decompressed or parsed), each
    dict led by `topic` and `partition` when given; appended to `out` when given."""
    if out is None:
        out = []
    if records is None:
        return out
    where = {} if topic is None else {"topic": topic, "partition": partition}
    n, pos = len(records), 0
    unpack = _BATCH_HEAD.unpack_from
    while n - pos >= _BATCH_MIN:
        (base_offset, length, _epoch, magic, _crc, attributes, last_offset_delta, _base_ts, max_timestamp,
         producer_id, producer_epoch, base_sequence, count) = unpack(records, pos)
        if magic != 2:  # legacy message sets are not described
            out.append({**where, "magic": magic, "size": n - pos})
            break
        size = LOG_OVERHEAD + length
        if pos + size > n:  # Fetch responses may end inside a batch
            out.append({**where, "truncated": True, "size": n - pos})
            break
        codec = attributes & 0x07
        out.append({**where, "base_offset": base_offset, "count": count, "last_offset_delta": last_offset_delta,
                    "size": size, "compression": _CODECS.get(codec) or Compression(codec).name.lower(),
                    "producer_id": producer_id, "producer_epoch": producer_epoch, "base_sequence": base_sequence,
                    "transactional": bool(attributes & 0x10), "control": bool(attributes & 0x20),
                    "max_timestamp": max_timestamp})
        pos += size
    return out


def _body(api_key: int, version: int, frame, is_request: bool):
    """(decoded message, header size) of a frame."""
    if is_request:   # (the header's fields came with the frame: only where the body starts is read)
        pos = request_body_offset(frame, api.request_header_version(api_key, version) == 2)
        # bytes: the codec decodes a large memoryview twice (a small window first)
        return api.decode_request(api_key, version, bytes(memoryview(frame)[pos:])), pos
    hv = api.response_header_version(api_key, version)
    _, pos = api.ResponseHeader.decode_from(frame, 0, hv)
    # bytes: the codec decodes a large memoryview twice (a small window first)
    return api.decode_response(api_key, version, bytes(memoryview(frame)[pos:])), pos


_TOPIC_TEXT: dict = {}   # topic id -> its text (Produce v13 / Fetch v13+ name topics by id only)


def _topic_text(topic_id) -> str:
    if not topic_id:
        return ""
    text = _TOPIC_TEXT.get(topic_id)
    if text is None:
        if len(_TOPIC_TEXT) > 4096:
            _TOPIC_TEXT.clear()
        text = _TOPIC_TEXT[topic_id] = str(topic_id)
    return text


def _produce_batches(msg) -> tuple[list[dict], set]:
    batches = []
    for t in msg.topic_data:
        name = t.name or _topic_text(getattr(t, "topic_id", None))
        for p in t.partition_data:
            batch_headers(p.records, name, p.index, batches)
    return batches, set()


def _fetch_batches(msg) -> tuple[list[dict], set]:
    batches, errors = [], set()
    if msg.error_code:
        errors.add(msg.error_code)
    for t in msg.responses:
        name = t.topic or _topic_text(getattr(t, "topic_id", None))
        for p in t.partitions:
            if p.error_code:
                errors.add(p.error_code)
            batch_headers(p.records, name, p.partition_index, batches)
    return batches, errors


def _error_codes(value, found: set) -> set:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("errorCode", "acknowledgeErrorCode") and isinstance(v, int):
                if v:
                    found.add(v)
            elif isinstance(v, (dict, list)):
                _error_codes(v, found)
    elif isinstance(value, list):
        for v in value:
            _error_codes(v, found)
    return found


def describe(api_key: int, version: int, frame, is_request: bool, bodies: bool) -> dict:
    """The decoded parts of one frame: body / batches / promoted fields / error codes."""
    out: dict = {}
    try:
        msg, _ = _body(api_key, version, frame, is_request)
    except Exception as e:  # a frame kshim cannot read is still traced, with the reason
        out["decode_error"] = str(e)[:300]
        return out
    try:
        _describe(out, api_key, version, msg, is_request, bodies)
    except Exception as e:
        out["decode_error"] = f"{type(e).__name__}: {e}"[:300]
    return out


def _describe(out: dict, api_key: int, version: int, msg, is_request: bool, bodies: bool) -> None:
    errors: set = set()
    if api_key == PRODUCE and is_request:
        out["batches"], errors = _produce_batches(msg)
    elif api_key == FETCH and not is_request:
        out["batches"], errors = _fetch_batches(msg)
    if api_key in SS.SUMMARISED:      # never the records, whatever `bodies` says
        body = SS.share_summary(api_key, msg, is_request)
    elif api_key in DECODED or bodies:
        body = redact(msg.to_json(version))
    else:
        body = None
    if body is not None:
        out["body"] = body
        errors |= _error_codes(body, set())
        for key, name in _PROMOTE:
            v = body.get(key)
            if v is not None and v != "":
                out[name] = v
        if api_key in SS.DESCRIBES:
            groups = SS.described_groups(api_key, body, is_request)
            if len(groups) == 1:
                out["group"] = groups[0]
            elif groups:
                out["groups"] = groups
        if api_key == API_VERSIONS and is_request and body.get("clientSoftwareName"):
            out["client_sw"] = body["clientSoftwareName"]
            out["client_sw_version"] = body.get("clientSoftwareVersion")
    if errors:
        out["error_codes"] = sorted(errors)


def wants_frame(api_key: int, is_request: bool, bodies: bool) -> bool:
    """Whether a frame's bytes must reach the writer (else only its header fields are traced)."""
    if api_key in DECODED or bodies and api_key in (PRODUCE, FETCH):
        return True
    return (api_key == PRODUCE) if is_request else (api_key == FETCH)


def event_record(ev: dict) -> dict:
    """A coordinator event as a record; the event's own fields stay in `body` (redacted)."""
    body = redact({k: v for k, v in ev.items()})
    rec = {"type": "event", "event": ev.get("event"), "group": ev.get("group")}
    for key in ("member", "instance", "generation"):
        if ev.get(key) is not None:
            rec[key] = ev[key]
    rec["body"] = body
    return rec


def api_name(api_key: int) -> str:
    return api.API_KEYS.get(api_key) or f"api{api_key}"
