"""Kafka protocol vocabulary: API keys and error codes (hand-written front of the generated
``kcodec.generated.protocol_names``; regenerate with scripts/regenerate).

    ApiKey        IntEnum of Kafka's ApiKeys: ApiKey.JOIN_GROUP == 11
    Error         IntEnum of Kafka's Errors: Error.UNKNOWN_MEMBER_ID == 25, Error.NONE == 0
    ERROR_INFO    {code: ErrorInfo(name, retriable, message)}  (message: Kafka's default
                  message, None for NONE; retriable: the exception extends RetriableException)
    ERROR_EXCEPTIONS  {code: Kafka's exception class name}
    error_name(code) / api_name(key): the name, or "UNKNOWN_ERROR(<code>)" / "UNKNOWN_API(<key>)"
                  for a code or key this Kafka version does not define (never raises)
    is_retriable(code): False for unknown codes (Kafka's clients read them as
                  UNKNOWN_SERVER_ERROR, which is not retriable)

Both enums are IntEnums, so they compare equal to the bare integers on the wire and can be
written into generated message fields as they are.
"""
from __future__ import annotations

from .generated.protocol_names import (ERROR_EXCEPTIONS, ERROR_INFO, KAFKA_VERSION, ApiKey,
                                       Error, ErrorInfo)

__all__ = ["ApiKey", "Error", "ErrorInfo", "ERROR_INFO", "ERROR_EXCEPTIONS", "KAFKA_VERSION",
           "error_name", "api_name", "is_retriable", "error_message"]

_API_NAMES = {int(k): k.name for k in ApiKey}


def error_name(code: int) -> str:
    info = ERROR_INFO.get(code)
    return info.name if info is not None else f"UNKNOWN_ERROR({code})"


def api_name(key: int) -> str:
    name = _API_NAMES.get(key)
    return name if name is not None else f"UNKNOWN_API({key})"


def is_retriable(code: int) -> bool:
    info = ERROR_INFO.get(code)
    return info is not None and info.retriable


def error_message(code: int) -> str | None:
    """Kafka's default message for the code (None for NONE and unknown codes)."""
    info = ERROR_INFO.get(code)
    return info.message if info is not None else None
