"""Runtime support shared by the generated codec modules (hand-written).

The generated modules in ``kcodec.generated`` hold one flat decode and one flat encode
function per (struct, version); this module only provides the small helpers they call
(unsigned varints, tagged-field sections, UUIDs), the common base class of all
generated message/struct classes (version dispatch, equality, repr, JSON) and the
translation of low-level failures into :class:`~kcodec.errors.DecodeError` /
:class:`~kcodec.errors.EncodeError` naming the message, field and offset.

Conventions of the generated classes:
  * attribute names are the snake_case JSON field names;
  * ``uuid`` fields are :class:`uuid.UUID`; ``bytes`` and ``records`` fields are
    ``bytes`` (or ``None`` when nullable); strings are ``str`` (bytes that are not valid
    UTF-8 are kept losslessly with the ``surrogateescape`` error handler);
  * every struct has ``_unknown_tagged_fields: dict[int, bytes]`` (raw tagged fields
    whose tag is unknown at that version; written back on encode, ascending tag order);
    it is a property over the ``_utf`` slot, which holds None while there are none.
"""
from __future__ import annotations

import linecache
import struct as _struct
import uuid as _uuid
from collections import namedtuple
from typing import Any

from ._markers import LIST, STRUCT  # noqa: F401 (the generated modules take them from here)
from .errors import DecodeError, EncodeError

__all__ = ["Struct", "DecodeError", "EncodeError"]

new = object.__new__
UUID = _uuid.UUID
_SafeUUID_unknown = _uuid.SafeUUID.unknown
_setattr = object.__setattr__
_from_bytes = int.from_bytes
ZERO16 = bytes(16)
ZERO_UUID = UUID(int=0)
unpack_from = _struct.unpack_from
pack = _struct.pack

# Field metadata used by the JSON converter, equality/repr, and the test strategies.
#   kind: bool int8 int16 uint16 int32 uint32 int64 float64 uuid string bytes records struct array
#   elem: element kind for arrays; cls: struct class (struct / array of struct)
#   vlo..vhi: versions; nlo..nhi: nullable versions (nlo > nhi: never); tlo: first tagged
#   version (-1: never tagged); default: immutable value, or LIST / STRUCT markers.
F = namedtuple("F", "attr name json kind elem cls vlo vhi nlo nhi tlo tag default ignorable")
NODEF: Any = type("_NoDefault", (), {"__repr__": lambda s: "<default>"})()

# ---------------------------------------------------------------- unsigned varints

UV = tuple(bytes((i,)) for i in range(128))


def uv_enc(n: int) -> bytes:
    """Unsigned varint (32-bit) encoding."""
    if n < 0x80:
        return UV[n]
    if n > 0xFFFFFFFF or n < 0:
        raise OverflowError(f"unsigned varint out of range: {n}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def uv(buf, pos: int):
    """Decode an unsigned varint at pos; returns (value, new_pos). At most 5 bytes."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    n = b & 0x7F
    shift = 7
    p = pos + 1
    while True:
        b = buf[p]
        p += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint is too long (more than 5 bytes)", offset=pos)
    if n > 0xFFFFFFFF:
        raise DecodeError("unsigned varint does not fit in 32 bits", offset=pos)
    return n, p


def uvm1(buf, pos: int):
    """Compact length: unsigned varint minus one; returns (value - 1, new_pos)."""
    n, pos = uv(buf, pos)
    return n - 1, pos


def uvm1s(buf, pos: int):
    """Compact string length (varint minus one); Kafka rejects strings over 0x7fff bytes."""
    n, pos = uv(buf, pos)
    if n - 1 > 0x7FFF:
        raise DecodeError(f"string length {n - 1} exceeds 32767", offset=pos)
    return n - 1, pos


_ARRAYS: dict = {}


def arrays(fmt: str) -> tuple:
    """Tuple of bound ``Struct('>{count}{fmt}').unpack_from`` for counts 0..255 (shared)."""
    t = _ARRAYS.get(fmt)
    if t is None:
        t = _ARRAYS[fmt] = tuple(_struct.Struct(f">{n}{fmt}").unpack_from for n in range(256))
    return t


_PACKERS: dict = {}


def packers(fmt: str, compact: bool) -> tuple:
    """Tuple of bound ``Struct.pack`` writing an array of ``fmt`` values with its count:
    compact: ``Struct('>B{n}{fmt}').pack(n + 1, *values)`` for n in 0..126 (the count as a
    one-byte unsigned varint); else ``Struct('>i{n}{fmt}').pack(n, *values)`` for 0..255."""
    key = (fmt, compact)
    t = _PACKERS.get(key)
    if t is None:
        t = _PACKERS[key] = tuple(
            _struct.Struct(f">{'B' if compact else 'i'}{n}{fmt}").pack
            for n in range(127 if compact else 256))
    return t


# uuid.UUID instances are immutable; topic ids repeat, so decoded ones are shared.
UUID_CACHE: dict = {ZERO16: ZERO_UUID}


def mkuuid(b) -> UUID:
    """uuid.UUID from 16 bytes without the cost of UUID.__init__ (cached, bounded)."""
    u = UUID_CACHE.get(b)
    if u is not None:
        return u
    b = bytes(b)
    u = new(UUID)
    _setattr(u, "int", _from_bytes(b, "big"))
    _setattr(u, "is_safe", _SafeUUID_unknown)
    if len(UUID_CACHE) >= 8192:
        UUID_CACHE.clear()
        UUID_CACHE[ZERO16] = ZERO_UUID
    UUID_CACHE[b] = u
    return u


# ---------------------------------------------------------------- tagged fields

# Kafka 4.4's generated readers (MessageDataGenerator output in the kafka-clients 4.4.0 jar) refuse an
# array count above 1,000,000 and a tagged-field count above 10,000 (or above the bytes left), whatever the
# bytes that follow: a request the broker cannot parse, so its connection closes
MAX_ARRAY_LENGTH = 1_000_000
MAX_TAGGED_FIELDS = 10_000


def rd_tags(buf, pos: int, bad=()):
    """Read a tagged-field section where no tag is known at this version.

    Returns (dict tag -> raw bytes, new_pos). ``bad`` are tags of fields that are tagged in
    other versions of the struct (Kafka rejects them)."""
    n, pos = uv(buf, pos)
    blen = len(buf)
    if n > MAX_TAGGED_FIELDS or n > blen - pos:
        raise dtags(n, pos, blen)
    out = {}
    for _ in range(n):
        tag, pos = uv(buf, pos)
        size, pos = uv(buf, pos)
        end = pos + size
        if end > blen:
            raise DecodeError(f"tagged field {tag} of {size} bytes runs past the end of the buffer",
                              offset=pos)
        if tag in bad:
            raise DecodeError(f"tag {tag} is not valid for this version", offset=pos)
        out[tag] = bytes(buf[pos:end])
        pos = end
    return out, pos


def wr_tags(w, known, unknown) -> None:
    """Write a tagged-field section: known [(tag, bytes)] merged with unknown {tag: bytes}."""
    if unknown:
        items = list(known)
        ktags = {t for t, _ in items}
        for t, data in unknown.items():
            if t in ktags:
                raise EncodeError(f"unknown tagged field {t} collides with a known tagged field")
            if not isinstance(t, int) or t < 0:
                raise EncodeError(f"invalid tag {t!r} in _unknown_tagged_fields")
            items.append((t, bytes(data)))
        items.sort(key=lambda x: x[0])
    else:
        items = known
    w(uv_enc(len(items)))
    for t, data in items:
        w(uv_enc(t))
        w(uv_enc(len(data)))
        w(data)


# ---------------------------------------------------------------- errors

def derr(msg: str, name: str, field: str, pos: int) -> DecodeError:
    return DecodeError(msg, name, field, pos)


def dlen(n: int, pos: int, blen: int, name: str, field: str, is_str: bool) -> DecodeError:
    if is_str and n > 0x7FFF:
        return DecodeError(f"string length {n} exceeds 32767", name, field, pos)
    return DecodeError(f"length {n} runs past the end of the buffer ({blen - pos} bytes left)",
                       name, field, pos)


def dalloc(n: int, pos: int, blen: int, name: str, field: str) -> DecodeError:
    return DecodeError(f"array of {n} elements cannot fit in the {blen - pos} remaining bytes",
                       name, field, pos)


def darr(n: int, pos: int, blen: int, name: str, field: str) -> DecodeError:
    """Count n of a non-nullable array failed ``0 <= n <= blen - pos`` or is above MAX_ARRAY_LENGTH."""
    if n < 0:
        return DecodeError("non-nullable field was serialized as null", name, field, pos)
    if n <= blen - pos:
        return DecodeError(f"array of {n} elements is longer than {MAX_ARRAY_LENGTH}", name, field, pos)
    return dalloc(n, pos, blen, name, field)


def dtags(n: int, pos: int, blen: int, name: str | None = None) -> DecodeError:
    """A tagged-field count above the bytes left or MAX_TAGGED_FIELDS."""
    return DecodeError(f"{n} tagged fields: more than the {blen - pos} bytes left or {MAX_TAGGED_FIELDS}",
                       name, "_tagged_fields", pos)


def eerr(msg: str, name: str, field: str | None) -> EncodeError:
    return EncodeError(msg, name, field)


def _field_at(filename: str, lineno: int) -> str | None:
    """The field a generated line belongs to: the nearest '#: Field' marker above it."""
    for ln in range(lineno, max(lineno - 400, 0), -1):
        text = linecache.getline(filename, ln).strip()
        if text.startswith("#: "):
            return text[3:]
        if text.startswith("def "):
            return None
    return None


def _innermost_generated(tb):
    last = None
    while tb is not None:
        co = tb.tb_frame.f_code
        if co.co_name.startswith(("_d_", "_e_")):
            last = tb
        tb = tb.tb_next
    return last


def _struct_of(co_name: str) -> str:
    # _d_<Struct>_v<N>
    return co_name[3:].rsplit("_v", 1)[0]


_DECODE_FAILURES = (_struct.error, IndexError, ValueError, TypeError, OverflowError,
                    RecursionError, MemoryError)
_ENCODE_FAILURES = (_struct.error, AttributeError, TypeError, ValueError, OverflowError,
                    KeyError, IndexError, RecursionError)


def _locate(exc: BaseException):
    tb = _innermost_generated(exc.__traceback__)
    if tb is None:
        return None, None, None
    co = tb.tb_frame.f_code
    name, field = _struct_of(co.co_name), _field_at(co.co_filename, tb.tb_lineno)
    if field and "." in field:
        name, field = field.split(".", 1)
    return name, field, tb.tb_frame.f_locals.get("pos")


def decode_failure(exc: BaseException, cls, version: int, start: int) -> DecodeError:
    name, field, offset = _locate(exc)
    if isinstance(exc, DecodeError):
        if exc.version is None:
            exc.version = version
        if exc.message_name is None:
            exc.message_name = name or cls.__name__
            if exc.field is None:
                exc.field = field
        if exc.offset is None:
            exc.offset = offset if offset is not None else start
        return exc
    if isinstance(exc, (_struct.error, IndexError)):
        msg = "truncated input (unexpected end of buffer)"
    elif isinstance(exc, UnicodeDecodeError):
        msg = f"invalid string: {exc.reason}"
    elif isinstance(exc, RecursionError):
        msg = "input nests too deeply"
    else:
        msg = f"{type(exc).__name__}: {exc}"
    return DecodeError(msg, name or cls.__name__, field, start if offset is None else offset, version)


def encode_failure(exc: BaseException, cls, version: int) -> EncodeError:
    name, field, _ = _locate(exc)
    if isinstance(exc, EncodeError):
        if exc.version is None:
            exc.version = version
        if exc.message_name is None:
            exc.message_name = name or cls.__name__
            if exc.field is None:
                exc.field = field
        return exc
    if isinstance(exc, AttributeError) and "NoneType" in str(exc):
        msg = "None given for a non-nullable field"
    elif isinstance(exc, _struct.error):
        msg = f"value out of range for its wire type ({exc})"
    elif isinstance(exc, UnicodeEncodeError):
        msg = f"string cannot be encoded as UTF-8: {exc.reason}"
    else:
        msg = f"invalid value ({type(exc).__name__}: {exc})"
    return EncodeError(msg, name or cls.__name__, field, version)


def absent(name: str, field: str) -> EncodeError:
    return EncodeError("attempted to write a non-default value for a field that does not exist "
                       "at this version (and is not ignorable)", name, field)


def as_buffer(buf) -> bytes:
    """The generated decoders work on ``bytes``; other buffers are copied once."""
    if type(buf) is bytes:
        return buf
    if isinstance(buf, (bytearray, memoryview)):
        return bytes(buf)
    raise TypeError(f"expected bytes, bytearray or memoryview, not {type(buf).__name__}")


# ---------------------------------------------------------------- base class

_WINDOW = 512

class Struct:
    """Base of every generated message and struct class."""

    __slots__ = ()
    _DEC: tuple = ()
    _ENC: tuple = ()
    _FIELDS: tuple = ()
    _FLEX_MIN: int | None = None

    @classmethod
    def decode_from(cls, buf, pos: int, version: int):
        """Decode one object at ``pos``; returns ``(obj, new_pos)``."""
        dec = cls._DEC[version] if 0 <= version < len(cls._DEC) else None
        if dec is None:
            raise DecodeError(f"unsupported version {version}", cls.__name__, None, pos, version)
        if pos < 0 or pos > len(buf):
            raise DecodeError(f"start offset {pos} outside the buffer", cls.__name__, None, pos, version)
        if type(buf) is not bytes:
            if len(buf) - pos > _WINDOW:
                # e.g. a request header at the start of a large memoryview frame: decode from
                # a small copy first, and copy everything only if that was not enough.
                try:
                    obj, end = dec(as_buffer(buf[pos:pos + _WINDOW]), 0)
                    if end <= _WINDOW:
                        return obj, pos + end
                except Exception:  # noqa: BLE001 - retried below on the whole buffer
                    pass
            buf = as_buffer(buf)
        try:
            return dec(buf, pos)
        except DecodeError as e:
            raise decode_failure(e, cls, version, pos) from None
        except _DECODE_FAILURES as e:
            raise decode_failure(e, cls, version, pos) from None

    @classmethod
    def decode(cls, buf, version: int):
        """Decode a whole buffer (trailing bytes are an error)."""
        if type(buf) is bytes and 0 <= version < len(cls._DEC):
            # fast path of decode_from(buf, 0, version) (same checks and errors)
            dec = cls._DEC[version]
            if dec is None:
                raise DecodeError(f"unsupported version {version}", cls.__name__, None, 0, version)
            try:
                obj, pos = dec(buf, 0)
            except DecodeError as e:
                raise decode_failure(e, cls, version, 0) from None
            except _DECODE_FAILURES as e:
                raise decode_failure(e, cls, version, 0) from None
        else:
            obj, pos = cls.decode_from(buf, 0, version)
        if pos != len(buf):
            raise DecodeError(f"{len(buf) - pos} unexpected trailing bytes", cls.__name__, None,
                              pos, version)
        return obj

    def encode_into(self, w, version: int) -> None:
        """Append the encoding to a writer callable (e.g. ``list.append``)."""
        enc = self._ENC[version] if 0 <= version < len(self._ENC) else None
        if enc is None:
            raise EncodeError(f"unsupported version {version}", type(self).__name__, None, version)
        try:
            enc(self, w)
        except EncodeError as e:
            raise encode_failure(e, type(self), version) from None
        except _ENCODE_FAILURES as e:
            raise encode_failure(e, type(self), version) from None

    def encode(self, version: int) -> bytes:
        # inlined encode_into(out.append, version)
        enc = self._ENC[version] if 0 <= version < len(self._ENC) else None
        if enc is None:
            raise EncodeError(f"unsupported version {version}", type(self).__name__, None, version)
        out: list = []
        try:
            enc(self, out.append)
        except EncodeError as e:
            raise encode_failure(e, type(self), version) from None
        except _ENCODE_FAILURES as e:
            raise encode_failure(e, type(self), version) from None
        return b"".join(out)

    def to_json(self, version: int) -> dict:
        """Kafka JsonConverter format (see kcodec._json)."""
        from . import _json
        return _json.to_json(self, version)

    @classmethod
    def from_json(cls, d: dict, version: int):
        from . import _json
        return _json.from_json(cls, d, version)

    @classmethod
    def versions(cls) -> tuple[int, ...]:
        return tuple(v for v, f in enumerate(cls._DEC) if f is not None)

    @property
    def _unknown_tagged_fields(self) -> dict:
        """Raw tagged fields whose tag is unknown at the decoded version: {tag: bytes}.
        Written back on encode (flexible versions only). Stored in the ``_utf`` slot, which
        is None while empty (saves a dict per decoded struct)."""
        d = self._utf
        if d is None:
            d = self._utf = {}
        return d

    @_unknown_tagged_fields.setter
    def _unknown_tagged_fields(self, value) -> None:
        self._utf = value or None

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        for s in self.__slots__:
            if s == "_utf":
                if (self._utf or None) != (other._utf or None):
                    return False
            elif getattr(self, s) != getattr(other, s):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"{f.attr}={getattr(self, f.attr)!r}" for f in self._FIELDS]
        if self._utf:
            parts.append(f"_unknown_tagged_fields={self._utf!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def copy(self):
        """Shallow copy."""
        c = new(type(self))
        for s in self.__slots__:
            _setattr(c, s, getattr(self, s))
        return c
