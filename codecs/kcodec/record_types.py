"""What a Kafka record batch (message format v2) decodes to: the codec, timestamp and control
types, the decoding errors, and the Header / ControlRecord / Record / RecordBatch values
(layout in kcodec.records, which reads them)."""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass, field

from .errors import DecodeError

LOG_OVERHEAD = 12          # baseOffset + batchLength


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


class RecordsError(DecodeError):
    """Base class of record-batch decoding errors."""


class CorruptRecords(RecordsError):
    """Structurally invalid batch or record (bad length, count, varint, ...)."""


class TruncatedRecords(RecordsError):
    """The blob ends inside a batch (only raised with ``strict=True``)."""


class CrcMismatch(RecordsError):
    """The batch's crc32c does not match its content."""

    def __init__(self, message, message_name=None, field=None, offset=None, version=None,
                 expected: int = 0, actual: int = 0):
        super().__init__(message, message_name, field, offset, version)
        self.expected = expected
        self.actual = actual


class UnsupportedRecordFormat(RecordsError):
    """A magic other than 2 (legacy message sets v0/v1, or an unknown future format)."""


class UnsupportedCompression(RecordsError):
    """A compression codec id outside 0-4."""


class DecompressionFailed(RecordsError):
    """The compressed records could not be decompressed (or exceed the size limit)."""


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode("ascii")


@dataclass(slots=True)
class Header:
    key: str
    value: bytes | None


@dataclass(slots=True)
class ControlRecord:
    """Decoded key (and, for ABORT/COMMIT markers, value) of a control record."""
    version: int
    type: int
    value_version: int | None = None
    coordinator_epoch: int | None = None

    @property
    def type_name(self) -> str:
        try:
            return ControlType(self.type).name
        except ValueError:
            return "UNKNOWN"


@dataclass(slots=True)
class Record:
    offset: int
    timestamp: int
    offset_delta: int
    timestamp_delta: int
    attributes: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)
    control: ControlRecord | None = None

    def to_dict(self) -> dict:
        d = {"offset": self.offset, "timestamp": self.timestamp,
             "key": _b64(self.key), "value": _b64(self.value),
             "headers": [{"key": h.key, "value": _b64(h.value)} for h in self.headers]}
        if self.attributes:
            d["attributes"] = self.attributes
        if self.control is not None:
            c = self.control
            d["control"] = {"version": c.version, "type": c.type_name}
            if c.coordinator_epoch is not None:
                d["control"]["coordinatorEpoch"] = c.coordinator_epoch
        return d


@dataclass(slots=True)
class RecordBatch:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    records: list[Record] = field(default_factory=list)

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & 0x07)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType((self.attributes >> 3) & 1)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & 0x40)

    @property
    def size_in_bytes(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def to_dict(self, records: bool = True) -> dict:
        d = {"baseOffset": self.base_offset, "batchLength": self.batch_length,
             "partitionLeaderEpoch": self.partition_leader_epoch, "magic": self.magic,
             "crc": self.crc, "compression": self.compression.name.lower(),
             "timestampType": self.timestamp_type.name,
             "isTransactional": self.is_transactional, "isControl": self.is_control,
             "hasDeleteHorizon": self.has_delete_horizon,
             "lastOffsetDelta": self.last_offset_delta, "baseTimestamp": self.base_timestamp,
             "maxTimestamp": self.max_timestamp, "producerId": self.producer_id,
             "producerEpoch": self.producer_epoch, "baseSequence": self.base_sequence,
             "recordsCount": self.records_count}
        if records:
            d["records"] = [r.to_dict() for r in self.records]
        return d
