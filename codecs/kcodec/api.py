"""Public index of the generated Kafka wire codec (hand-written; tables come from
``kcodec.generated._index``).

    API_KEYS:  {api_key: name}                e.g. {3: "Metadata", ...}
    REQUESTS:  {api_key: request class}       (lazy mapping: modules load on first access)
    RESPONSES: {api_key: response class}
    VERSIONS:  {api_key: (min, max)}          valid versions of the pinned Kafka schemas
    FLEXIBLE_MIN: {api_key: first flexible version or None}
    UNSTABLE_VERSIONS: {api_key: (versions,)} latestVersionUnstable versions (Kafka hides them
                                              from ApiVersions unless unstable APIs are enabled)
    LISTENERS: {api_key: ("broker", "controller", ...)}
    REMOVED_API_KEYS: {api_key: name}         schemas present but with no valid version
    request_header_version(api_key, api_version) -> 1 | 2
    response_header_version(api_key, api_version) -> 0 | 1 (ApiVersions: always 0)
    decode_request(api_key, version, buf) / decode_response(api_key, version, buf)
    encode_response(api_key, version, correlation_id, body) -> response header + body bytes
    RequestHeader / ResponseHeader: .decode_from(buf, pos, header_version) -> (hdr, pos)
    data_class(name): class of a non-API schema (e.g. "ConsumerProtocolSubscription")

Every decode raises kcodec.errors.DecodeError on malformed input (including an unknown
api key or an unsupported version); every encode raises kcodec.errors.EncodeError.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from .errors import DecodeError
from .frames import response_header
from .generated import _index
from .generated.protocol_names import ApiKey
from .generated.request_header import RequestHeader
from .generated.response_header import ResponseHeader

__all__ = [
    "API_KEYS", "REQUESTS", "RESPONSES", "VERSIONS", "FLEXIBLE_MIN", "UNSTABLE_VERSIONS",
    "LISTENERS", "REMOVED_API_KEYS", "KAFKA_VERSION", "request_header_version",
    "response_header_version", "decode_request", "decode_response", "encode_response", "request_class",
    "response_class", "data_class", "RequestHeader", "ResponseHeader", "DecodeError",
]

KAFKA_VERSION: str | None = _index.KAFKA_VERSION
API_KEYS: dict[int, str] = {k: row[0] for k, row in _index.APIS.items()}
VERSIONS: dict[int, tuple[int, int]] = {k: row[4] for k, row in _index.APIS.items()}
FLEXIBLE_MIN: dict[int, int | None] = {k: row[5] for k, row in _index.APIS.items()}
UNSTABLE_VERSIONS: dict[int, tuple[int, ...]] = {k: row[6] for k, row in _index.APIS.items()}
LISTENERS: dict[int, tuple[str, ...]] = {k: row[7] for k, row in _index.APIS.items()}
REMOVED_API_KEYS: dict[int, str] = dict(_index.REMOVED_APIS)
API_VERSIONS_KEY = ApiKey.API_VERSIONS  # names for every key: kcodec.protocol.ApiKey

_modules: dict[str, object] = {}


def _module(name: str):
    mod = _modules.get(name)
    if mod is None:
        mod = importlib.import_module(f"{__package__}.generated.{name}")
        _modules[name] = mod
    return mod


class _LazyClasses(Mapping):
    """Read-only {api_key: class}; a generated module is imported on first access."""

    def __init__(self, column: int):
        self._column = column
        self._cache: dict[int, type] = {}

    def __getitem__(self, api_key: int) -> type:
        cls = self._cache.get(api_key)
        if cls is None:
            row = _index.APIS[api_key]  # KeyError for unknown keys, as a dict would
            cls = getattr(_module(row[1]), row[self._column])
            self._cache[api_key] = cls
        return cls

    def __iter__(self) -> Iterator[int]:
        return iter(_index.APIS)

    def __len__(self) -> int:
        return len(_index.APIS)

    def __contains__(self, api_key: object) -> bool:
        return api_key in _index.APIS

    def __repr__(self) -> str:
        return f"<lazy {{api_key: class}} of {len(self)} APIs>"


REQUESTS: Mapping[int, type] = _LazyClasses(2)
RESPONSES: Mapping[int, type] = _LazyClasses(3)


def _check(api_key: int, api_version: int, what: str) -> None:
    rng = VERSIONS.get(api_key)
    if rng is None:
        removed = REMOVED_API_KEYS.get(api_key)
        why = f" ({removed} has no valid version in Kafka {KAFKA_VERSION})" if removed else ""
        raise DecodeError(f"unknown api key {api_key}{why}", what, None, None, api_version)
    if not rng[0] <= api_version <= rng[1]:
        raise DecodeError(f"unsupported version {api_version} of {API_KEYS[api_key]} "
                          f"(valid {rng[0]}-{rng[1]})", what, None, None, api_version)


def request_class(api_key: int) -> type:
    _check(api_key, VERSIONS.get(api_key, (0, 0))[0], "request")
    return REQUESTS[api_key]


def response_class(api_key: int) -> type:
    _check(api_key, VERSIONS.get(api_key, (0, 0))[0], "response")
    return RESPONSES[api_key]


def is_flexible(api_key: int, api_version: int) -> bool:
    fmin = FLEXIBLE_MIN.get(api_key)
    return fmin is not None and api_version >= fmin


def request_header_version(api_key: int, api_version: int) -> int:
    """Request header v2 for flexible API versions, else v1 (v0 no longer exists in 4.x)."""
    _check(api_key, api_version, "RequestHeader")
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """Response header v1 for flexible API versions, else v0. ApiVersions responses always
    use v0 (KIP-511: a client must be able to parse it before knowing the broker's versions)."""
    _check(api_key, api_version, "ResponseHeader")
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


_RESPONSE_HEADER_VERSIONS: dict[tuple[int, int], int] = {}   # (api key, version) -> header version


def encode_response(api_key: int, version: int, correlation_id: int, body) -> bytes:
    """A response frame without its length prefix: the response header of this API version (its
    version looked up once per api key and version) and `body` encoded in `version`."""
    hv = _RESPONSE_HEADER_VERSIONS.get((api_key, version))
    if hv is None:
        hv = _RESPONSE_HEADER_VERSIONS[(api_key, version)] = response_header_version(api_key, version)
    return response_header(correlation_id, hv) + body.encode(version)


def decode_request(api_key: int, version: int, buf):
    """Decode a request body (after the header); trailing bytes are an error."""
    _check(api_key, version, f"{API_KEYS.get(api_key, 'unknown')}Request")
    return REQUESTS[api_key].decode(buf, version)


def decode_response(api_key: int, version: int, buf):
    """Decode a response body (after the header); trailing bytes are an error."""
    _check(api_key, version, f"{API_KEYS.get(api_key, 'unknown')}Response")
    return RESPONSES[api_key].decode(buf, version)


def data_class(name: str) -> type:
    """Class of a header/data schema by its schema name (see kcodec.generated._index.OTHER)."""
    row = _index.OTHER[name]
    return getattr(_module(row[0]), name)
