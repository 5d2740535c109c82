"""The group coordinator's records, as Kafka writes them to __consumer_offsets (hand-written front of
``kcodec.generated._coordinator_records``, generated from the kafka-group-coordinator jar's schemas
pinned in codecs/schemas/coordinator/).

    KEYS            {record type: key class}      e.g. {2: GroupMetadataKey, ...}
    VALUES          {record type: value class}    e.g. {2: GroupMetadataValue, ...}
    VALUE_VERSIONS  {record type: (min, max)}     the value versions Kafka reads
    NAMES           {record type: name}           e.g. {2: "GroupMetadata"}
    decode_key(data) -> (record type, key)
    decode_value(record_type, data) -> (version, value), or None for a tombstone (data None)
    encode_key(record_type, key) -> bytes
    encode_value(version, value) -> bytes
    record_name(record_type): the name, or "UnknownRecordType(<type>)" (never raises)

The layout is Kafka's CoordinatorRecordSerde (org.apache.kafka.coordinator.common.runtime):

    key   = int16 record type, then the key at version 0
    value = int16 value version, then the value at that version; a null value is a tombstone

and the classes are the ones GroupCoordinatorRecordSerde (org.apache.kafka.coordinator.group) takes
from the generated CoordinatorRecordType: the key and the value schema whose apiKey is the record
type. So the two offset commit types have their own values: type 0 (LegacyOffsetCommitKey) has
LegacyOffsetCommitValue, version 0 only; type 1 (OffsetCommitKey) has OffsetCommitValue, 0-4.

As in Kafka: an unknown record type raises UnknownRecordType, a value version outside the value
schema's valid versions UnknownRecordVersion (both DecodeErrors, like every malformed input), and
bytes after a key or value body are not looked at (Kafka's readers stop at the body's end). Kafka
reads a key "at version" its record type; every key has validVersions 0 and fields "0", so that
reads what version 0 does, which is what decode_key uses.
"""
from __future__ import annotations

from struct import Struct, error as StructError

from .errors import DecodeError, EncodeError
from .generated._coordinator_records import KAFKA_VERSION, KEYS, NAMES, VALUE_VERSIONS, VALUES

__all__ = ["KEYS", "VALUES", "VALUE_VERSIONS", "NAMES", "KAFKA_VERSION", "UnknownRecordType",
           "UnknownRecordVersion", "decode_key", "decode_value", "encode_key", "encode_value",
           "record_name"]

_INT16 = Struct(">h")


class UnknownRecordType(DecodeError):
    """A record type no key/value schema has (Kafka: Deserializer.UnknownRecordTypeException)."""

    def __init__(self, record_type: int):
        self.record_type = record_type
        super().__init__(f"unknown coordinator record type {record_type}", "coordinator record key",
                         None, 0)

    def __reduce__(self):
        return (type(self), (self.record_type,))


class UnknownRecordVersion(DecodeError):
    """A value version outside its schema's valid versions (Kafka:
    Deserializer.UnknownRecordVersionException). ``version`` is the unknown version."""

    def __init__(self, record_type: int, version: int):
        self.record_type = record_type
        lo, hi = VALUE_VERSIONS[record_type]
        super().__init__(f"unknown version {version} of {VALUES[record_type].__name__} "
                         f"(valid {lo}-{hi})", "coordinator record value", None, 0, version)

    def __reduce__(self):
        return (type(self), (self.record_type, self.version))


def record_name(record_type: int) -> str:
    name = NAMES.get(record_type)
    return name if name is not None else f"UnknownRecordType({record_type})"


def _prefix(data, what: str) -> int:
    try:
        return _INT16.unpack_from(data, 0)[0]
    except StructError:
        raise DecodeError(f"could not read the {what} ({len(data)} bytes)",
                          f"coordinator record {what.split()[-1]}", None, 0) from None


def decode_key(data) -> tuple[int, object]:
    """(record type, key object) of a __consumer_offsets record key."""
    record_type = _prefix(data, "record type of the key")
    cls = KEYS.get(record_type)
    if cls is None:
        raise UnknownRecordType(record_type)
    return record_type, cls.decode_from(data, 2, 0)[0]


def decode_value(record_type: int, data) -> tuple[int, object] | None:
    """(value version, value object) of a record value of this type; None for a tombstone."""
    cls = VALUES.get(record_type)
    if cls is None:
        raise UnknownRecordType(record_type)
    if data is None:
        return None
    version = _prefix(data, "version of the value")
    lo, hi = VALUE_VERSIONS[record_type]
    if not lo <= version <= hi:
        raise UnknownRecordVersion(record_type, version)
    return version, cls.decode_from(data, 2, version)[0]


def encode_key(record_type: int, key) -> bytes:
    """The record type and the key at version 0 (the key must be of the type's key class)."""
    cls = KEYS.get(record_type)
    if cls is None:
        raise EncodeError(f"unknown coordinator record type {record_type}", "coordinator record key")
    if type(key) is not cls:
        raise EncodeError(f"record type {record_type} takes a {cls.__name__}, not a {type(key).__name__}",
                          "coordinator record key")
    return _INT16.pack(record_type) + key.encode(0)


def encode_value(version: int, value) -> bytes:
    """The version and the value object at that version."""
    if not -0x8000 <= version <= 0x7FFF:
        raise EncodeError(f"version {version} is not an int16", type(value).__name__, None, version)
    return _INT16.pack(version) + value.encode(version)
