"""Shared helpers of the code emitters: code buffer, per-module constants, field facts."""
from __future__ import annotations

import uuid
from contextlib import contextmanager

from gen_model import FIXED_FMT, FIXED_SIZE, Field, MessageSpec, StructDef


class Code:
    """Indented line buffer."""

    def __init__(self, indent: int = 0):
        self.lines: list[str] = []
        self.ind = indent

    def __call__(self, line: str = "") -> None:
        self.lines.append(("    " * self.ind + line) if line else "")

    @contextmanager
    def block(self, header: str):
        self(header)
        self.ind += 1
        try:
            yield
        finally:
            self.ind -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class ModuleCtx:
    """Per generated module: precompiled Struct formats and other constants."""

    def __init__(self):
        self.structs: dict[str, str] = {}
        self.consts: dict[str, str] = {}  # source expr -> name
        self.arrays: dict[str, str] = {}  # struct format char -> name
        self.packarrays: dict[tuple[str, bool], str] = {}  # (char, compact) -> name

    def arr(self, ch: str) -> str:
        """Name of the tuple of bound unpackers for arrays of 0..255 elements of format ch."""
        names = {"b": "_A8", "h": "_A16", "H": "_AU16", "i": "_A32", "I": "_AU32", "q": "_A64",
                 "d": "_AF64", "?": "_ABOOL"}
        self.arrays[ch] = names[ch]
        return names[ch]

    def packarr(self, ch: str, compact_: bool) -> str:
        """Name of the tuple of bound packers writing count + elements of format ch:
        compact (1-byte varint count+1, counts 0..126) or int32 count (0..255)."""
        tag = {"?": "BOOL", "b": "8", "h": "16", "H": "U16", "i": "32", "I": "U32", "q": "64",
               "d": "F64"}[ch]
        name = f"_PC{tag}" if compact_ else f"_PN{tag}"
        self.packarrays[(ch, compact_)] = name
        return name

    def fmt(self, chars: list[str]) -> str:
        fmt = ">" + "".join(chars)
        name = self.structs.get(fmt)
        if name is None:
            tag = "".join({"?": "o", "16s": "U"}.get(c, c) for c in chars)
            name = f"_S_{tag}"
            self.structs[fmt] = name
        return name

    def const(self, expr: str) -> str:
        name = self.consts.get(expr)
        if name is None:
            name = f"_C{len(self.consts)}"
            self.consts[expr] = name
        return name

    def preamble(self) -> list[str]:
        out = [f"{n} = _Sc({fmt!r})" for fmt, n in sorted(self.structs.items(), key=lambda x: x[1])]
        out += [f"{n} = {e}" for e, n in sorted(self.consts.items(), key=lambda x: int(x[1][2:]))]
        out += [f"{n} = _arrays({ch!r})" for ch, n in sorted(self.arrays.items(), key=lambda x: x[1])]
        out += [f"{n} = _packers({ch!r}, {cp!r})"
                for (ch, cp), n in sorted(self.packarrays.items(), key=lambda x: x[1])]
        return out


def status(f: Field, v: int) -> str:
    """'absent', 'regular' or 'tagged' for field f at version v."""
    if v not in f.versions:
        return "absent"
    return "tagged" if v in f.tagged else "regular"


def is_flexible(spec: MessageSpec, v: int) -> bool:
    return v in spec.flexible


def compact(f: Field, spec: MessageSpec, v: int) -> bool:
    return v in (f.flexible_override or spec.flexible)


def nullable(f: Field, v: int) -> bool:
    return v in f.nullable


def nullable_any(f: Field) -> bool:
    return not f.nullable.empty


def default_src(f: Field, ctx: ModuleCtx, fresh: bool = True) -> str:
    """Source expression of the field's default value."""
    d = f.default_value()
    if d == "LIST":
        return "[]" if fresh else "_LIST"
    if d == "STRUCT":
        return f"{f.struct.pyname}()" if fresh else "_STRUCT"
    if isinstance(d, uuid.UUID):
        return "_ZERO_UUID" if d.int == 0 else ctx.const(f"_UUID({str(d)!r})")
    if isinstance(d, float):
        return repr(d)
    return repr(d)


def nondefault_src(f: Field, x: str, ctx: ModuleCtx) -> str:
    """Condition that is true when value x differs from the field default (Kafka's rules)."""
    d = f.default_value()
    if d is None:
        return f"{x} is not None"
    if d == "LIST" or isinstance(d, bytes):
        return f"({x} is None or len({x}) != 0)"
    if d == "STRUCT":
        return f"{x} != {f.struct.pyname}()"
    return f"{x} != {default_src(f, ctx)}"


def fixed_elem_fmt(kind: str) -> str:
    return FIXED_FMT[kind]


def fixed_size(kind: str) -> int:
    return FIXED_SIZE[kind]


def struct_tags(sd: StructDef) -> dict[int, Field]:
    return {f.tag: f for f in sd.fields if f.tag is not None}


def bad_tags(sd: StructDef, v: int) -> tuple[int, ...]:
    """Tags of fields that are tagged in some version, but not at v (Kafka rejects these)."""
    return tuple(sorted(f.tag for f in sd.fields
                        if f.tag is not None and status(f, v) != "tagged"))
