"""Emits one flat decode function per (struct, version).

Signature of every generated decoder: ``_d_<Struct>_v<N>(buf, pos) -> (obj, pos)`` where
``buf`` is ``bytes`` (the runtime converts other buffers once). Consecutive fixed-width
fields are read with one precompiled ``Struct.unpack_from``; in non-flexible versions the
int16/int32 length prefix of a following string/bytes/array (or the int8 marker of a
nullable struct) is folded into the same call. Elements of struct arrays are decoded
inline in the loop (up to MAX_INLINE levels), so a hot loop makes no function calls.
Lines are preceded by ``#: Struct.Field`` markers, which the runtime uses to name the
field of a failure (struct.error / IndexError from a short buffer).

In flexible versions the first byte of a following compact length (or of the tagged-field
section) is folded into the unpack of a fixed-width group as a 'B'; a value >= 0x80 means
a multi-byte varint, which is then re-read from that byte. Strings are decoded as strict
UTF-8 (the fast path) and only on failure with ``surrogateescape``, which keeps invalid
bytes losslessly. Empty fixed-width arrays skip the unpack.
"""
from __future__ import annotations

from gen_common import (Code, ModuleCtx, bad_tags, compact, default_src, fixed_size,
                        is_flexible, nullable, status)
from gen_model import FIXED_FMT, Field, StructDef

# the limits of Kafka 4.4's generated readers (kcodec/_rt.py MAX_ARRAY_LENGTH, MAX_TAGGED_FIELDS)
MAX_ARRAY_LENGTH, MAX_TAGGED_FIELDS = 1_000_000, 10_000

MAX_INLINE = 3
STR_FALLBACK = ".decode('utf-8', 'surrogateescape')"


class DecodeEmitter:
    def __init__(self, ctx: ModuleCtx, out: list[str]):
        self.ctx = ctx
        self.out = out
        self.names: dict[tuple[int, int], str] = {}
        self.bodies: dict[tuple[str, str], str] = {}

    def fn(self, sd: StructDef, v: int) -> str:
        """Name of the decoder of sd at version v (generated on first use, deduplicated)."""
        key = (id(sd), v)
        if key in self.names:
            return self.names[key]
        saved = (getattr(self, "v", None), getattr(self, "spec", None), getattr(self, "c", None))
        try:
            text = self._gen(sd, v)
        finally:
            self.v, self.spec, self.c = saved
        name = self.bodies.get((sd.pyname, text))
        if name is None:
            name = f"_d_{sd.pyname}_v{v}"
            self.bodies[(sd.pyname, text)] = name
            self.out.append(text.replace("__FN__", name))
        self.names[key] = name
        return name

    def _gen(self, sd: StructDef, v: int) -> str:
        self.v, self.spec = v, sd.owner
        c = self.c = Code()
        with c.block("def __FN__(buf, pos):"):
            c("blen = len(buf)")
            c(f"o = _new({sd.pyname})")
            self._body(sd, "o", 0)
            c("return o, pos")
        if sum("blen" in ln for ln in c.lines) == 1:
            c.lines.remove("    blen = len(buf)")
        return c.text()

    # ------------------------------------------------------------------ struct body

    def _body(self, sd: StructDef, ov: str, depth: int) -> None:
        """Decode the fields of sd into the object held in variable ov."""
        c, v, spec = self.c, self.v, self.spec
        sx = str(depth) if depth else ""
        group: list[Field] = []
        for f in sd.fields:
            if status(f, v) != "regular":
                continue
            k = f.kind
            if k in FIXED_FMT:
                group.append(f)
            elif k == "struct":
                if nullable(f, v):
                    self._flush(sd, ov, sx, group, ("b", f))
                    self._struct_field(f, ov, f"n{sx}", tagged=False)
                else:
                    self._flush(sd, ov, sx, group, None)
                    c(f"#: {sd.pyname}.{f.name}")
                    c(f"{ov}.{f.attr}, pos = {self.fn(f.struct, v)}(buf, pos)")
            else:
                if compact(f, spec, v):
                    if group:
                        self._flush(sd, ov, sx, group, ("B", f))
                    else:
                        c(f"#: {sd.pyname}.{f.name}")
                        self._read_len(f"n{sx}", k == "string")
                else:
                    self._flush(sd, ov, sx, group, ("h" if k == "string" else "i", f))
                self._var_body(sd, f, f"{ov}.{f.attr}", nullable(f, v), depth)
        tag_byte = False
        if group and is_flexible(spec, v) and not any(
                status(f, v) == "tagged" for f in sd.fields):
            # the tagged-field count byte is read with the trailing fixed fields
            self._flush(sd, ov, sx, group, ("B", None))
            tag_byte = True
        self._flush(sd, ov, sx, group, None)
        for f in sd.fields:
            if status(f, v) in ("absent", "tagged"):
                c(f"{ov}.{f.attr} = {default_src(f, self.ctx)}")
        if tag_byte:
            c(f"#: {sd.pyname}._tagged_fields")
            c(f"if t{sx}: {ov}._utf, pos = _rd_tags(buf, pos - 1, {bad_tags(sd, v)!r})")
            c(f"else: {ov}._utf = None")
        elif is_flexible(spec, v):
            self._tag_section(sd, ov, depth)
        else:
            c(f"{ov}._utf = None")

    def _flush(self, sd: StructDef, ov: str, sx: str, group: list[Field], prefix) -> None:
        """Emit one unpack for the fixed fields in group (+ optional length/marker prefix).

        prefix: (format char, field) of a following length (int16/int32, non-flexible) or
        nullable-struct marker (int8), read into n<depth>; ("B", field) is the first byte
        of a following compact length, ("B", None) the first byte of the tagged-field
        section (read into t<depth>)."""
        if not group and prefix is None:
            return
        c = self.c
        chars = [FIXED_FMT[f.kind] for f in group]
        targets = []
        uuids = []
        for f in group:
            if f.kind == "uuid":
                tmp = f"u{sx}_{len(uuids)}"
                uuids.append((f, tmp))
                targets.append(tmp)
            else:
                targets.append(f"{ov}.{f.attr}")
        names = [f.name for f in group]
        if prefix is not None:
            chars.append(prefix[0])
            if prefix[0] == "B" and prefix[1] is None:
                targets.append(f"t{sx}")
                names.append("_tagged_fields")
            else:
                targets.append(f"n{sx}")
                names.append(prefix[1].name)
        size = sum(fixed_size(f.kind) for f in group) + {"b": 1, "B": 1, "h": 2, "i": 4}.get(
            prefix[0] if prefix else "", 0)
        s = self.ctx.fmt(chars)
        c(f"#: {sd.pyname}.{', '.join(names)}")
        c(f"{', '.join(targets)}{',' if len(targets) == 1 else ''} = {s}.unpack_from(buf, pos)")
        c(f"pos += {size}")
        for f, tmp in uuids:
            c(f"{ov}.{f.attr} = _UC.get({tmp}) or _mkuuid({tmp})")
        if prefix is not None and prefix[0] == "B" and prefix[1] is not None:
            # one-byte varint (the common case) or re-read the whole varint from that byte
            f = prefix[1]
            c(f"#: {sd.pyname}.{f.name}")
            c(f"if n{sx} < 128: n{sx} -= 1")
            c(f"else: n{sx}, pos = {'_uvm1s' if f.kind == 'string' else '_uvm1'}(buf, pos - 1)")
        group.clear()

    def _read_len(self, var: str, is_str: bool = False) -> None:
        """Compact length: unsigned varint minus one (-1 = null). A one-byte varint is at
        most 126, so Kafka's 0x7fff limit for strings is only checked on the slow path."""
        c = self.c
        c(f"{var} = buf[pos] - 1")
        c(f"if {var} < 127: pos += 1")
        c(f"else: {var}, pos = {'_uvm1s' if is_str else '_uvm1'}(buf, pos)")

    def _var_body(self, sd: StructDef, f: Field, target: str, is_nullable: bool,
                  depth: int) -> None:
        """n<depth> holds the length/count (-1 = null); decode the value into target."""
        c = self.c
        n = f"n{depth or ''}"
        if is_nullable:
            c(f"if {n} < 0: {target} = None")
            with c.block("else:"):
                self._var_value(sd, f, target, depth)
        elif f.kind == "array":
            # null and too-long counts are told apart by _darr (one test on the fast path; the count limit
            # of Kafka 4.4's readers, _rt.MAX_ARRAY_LENGTH, is a second one only past it)
            c(f"if not 0 <= {n} <= blen - pos or {n} > {MAX_ARRAY_LENGTH}: raise _darr({n}, pos, blen, "
              f"{sd.pyname!r}, {f.name!r})")
            self._var_value(sd, f, target, depth, checked=True)
        else:
            c(f"if {n} < 0: raise _derr('non-nullable field was serialized as null', "
              f"{sd.pyname!r}, {f.name!r}, pos)")
            self._var_value(sd, f, target, depth)

    def _var_value(self, sd: StructDef, f: Field, target: str, depth: int,
                   checked: bool = False) -> None:
        c, v = self.c, self.v
        sx = str(depth) if depth else ""
        n, e, x, ap = f"n{sx}", f"e{sx}", f"x{sx}", f"ap{sx}"
        nm = f"{sd.pyname!r}, {f.name!r}"
        k = f.kind
        if k == "string":
            c(f"{e} = pos + {n}")
            c(f"if {e} > blen: raise _dlen({n}, pos, blen, {nm}, True)")
            self._str(target + " = ", "", e)
            c(f"pos = {e}")
        elif k in ("bytes", "records"):
            c(f"{e} = pos + {n}")
            c(f"if {e} > blen: raise _dlen({n}, pos, blen, {nm}, False)")
            c(f"{target} = buf[pos:{e}]")
            c(f"pos = {e}")
        elif k == "array":
            if not checked:
                c(f"if {n} > blen - pos or {n} > {MAX_ARRAY_LENGTH}: raise _darr({n}, pos, blen, {nm})")
            ek = f.elem_kind
            if ek == "struct":
                c(f"{x} = []")
                c(f"{ap} = {x}.append")
                if depth < MAX_INLINE:
                    child = f"o{depth + 1}"
                    with c.block(f"for _ in range({n}):"):
                        c(f"{child} = _new({f.struct.pyname})")
                        self._body(f.struct, child, depth + 1)
                        c(f"{ap}({child})")
                else:
                    d = self.fn(f.struct, v)
                    with c.block(f"for _ in range({n}):"):
                        c(f"v{sx}, pos = {d}(buf, pos)")
                        c(f"{ap}(v{sx})")
                c(f"{target} = {x}")
            elif ek == "uuid":
                c(f"{e} = pos + 16 * {n}")
                c(f"if {e} > blen: raise _dlen({n} * 16, pos, blen, {nm}, False)")
                c(f"{target} = [_mkuuid(buf[i:i + 16]) for i in range(pos, {e}, 16)]")
                c(f"pos = {e}")
            elif ek in FIXED_FMT:
                ch, sz = FIXED_FMT[ek], fixed_size(ek)
                # unpack_from itself fails on a short buffer; the count was bounded above
                c(f"if {n} == 0: {target} = []")
                with c.block("else:"):
                    c(f"{target} = [*{self.ctx.arr(ch)}[{n}](buf, pos)] if {n} < 256 "
                      f"else list(_unpack_from('>%d{ch}' % {n}, buf, pos))")
                    c(f"pos += {n}" if sz == 1 else f"pos += {sz} * {n}")
            else:  # string / bytes elements (never null)
                m = f"m{sx}"
                c(f"{x} = []")
                c(f"{ap} = {x}.append")
                with c.block(f"for _ in range({n}):"):
                    if compact(f, self.spec, v):
                        self._read_len(m, ek == "string")
                    else:
                        ch = "h" if ek == "string" else "i"
                        c(f"{m}, = {self.ctx.fmt([ch])}.unpack_from(buf, pos)")
                        c(f"pos += {2 if ch == 'h' else 4}")
                    c(f"if {m} < 0: raise _derr('null array element', {nm}, pos)")
                    c(f"{e} = pos + {m}")
                    if ek == "string":
                        c(f"if {e} > blen: raise _dlen({m}, pos, blen, {nm}, True)")
                        self._str(f"{ap}(", ")", e)
                    else:
                        c(f"if {e} > blen: raise _dlen({m}, pos, blen, {nm}, False)")
                        c(f"{ap}(buf[pos:{e}])")
                    c(f"pos = {e}")
                c(f"{target} = {x}")
        else:
            raise AssertionError(k)

    def _str(self, before: str, after: str, e: str) -> None:
        """Decode buf[pos:e] as a string into `before ... after` (strict UTF-8 fast path)."""
        c = self.c
        c(f"try: {before}buf[pos:{e}].decode(){after}")
        c(f"except UnicodeDecodeError: {before}buf[pos:{e}]{STR_FALLBACK}{after}")

    def _struct_field(self, f: Field, ov: str, marker: str, tagged: bool) -> None:
        """Nullable struct whose marker (int8, or uvarint when tagged) is in `marker`."""
        c = self.c
        d = self.fn(f.struct, self.v)
        cond = f"{marker} <= 0" if tagged else f"{marker} < 0"
        c(f"if {cond}: {ov}.{f.attr} = None")
        c(f"else: {ov}.{f.attr}, pos = {d}(buf, pos)")

    # ------------------------------------------------------------------ tagged fields

    def _tag_section(self, sd: StructDef, ov: str, depth: int) -> None:
        c, v = self.c, self.v
        sx = str(depth) if depth else ""
        known = sorted((f for f in sd.fields if status(f, v) == "tagged"), key=lambda f: f.tag)
        bad = bad_tags(sd, v)
        c(f"#: {sd.pyname}._tagged_fields")
        if not known:
            c(f"if buf[pos]: {ov}._utf, pos = _rd_tags(buf, pos, {bad!r})")
            with c.block("else:"):
                c(f"{ov}._utf = None")
                c("pos += 1")
            return
        u, t, te = f"u{sx}", f"t{sx}", f"te{sx}"
        c(f"{u} = {{}}")
        c(f"k{sx}, pos = _uv(buf, pos)")
        c(f"if k{sx} > {MAX_TAGGED_FIELDS} or k{sx} > blen - pos: raise _dtags(k{sx}, pos, blen, {sd.pyname!r})")
        with c.block(f"for _ in range(k{sx}):"):
            c(f"{t}, pos = _uv(buf, pos)")
            c(f"s{sx}, pos = _uv(buf, pos)")
            c(f"{te} = pos + s{sx}")
            c(f"if {te} > blen: raise _dlen(s{sx}, pos, blen, {sd.pyname!r}, '_tagged_fields', False)")
            kw = "if"
            for f in known:
                with c.block(f"{kw} {t} == {f.tag}:"):
                    c(f"#: {sd.pyname}.{f.name}")
                    self._tagged_value(sd, f, ov, depth)
                    c(f"if pos != {te}: raise _derr('tagged field size mismatch', "
                      f"{sd.pyname!r}, {f.name!r}, pos)")
                kw = "elif"
            if bad:
                c(f"elif {t} in {bad!r}: raise _derr('tag %d is not valid for this version' % {t}, "
                  f"{sd.pyname!r}, '_tagged_fields', pos)")
            with c.block("else:"):
                c(f"#: {sd.pyname}._tagged_fields")
                c(f"{u}[{t}] = buf[pos:{te}]")
                c(f"pos = {te}")
        c(f"{ov}._utf = {u} or None")

    def _tagged_value(self, sd: StructDef, f: Field, ov: str, depth: int) -> None:
        c, v = self.c, self.v
        k = f.kind
        if k in FIXED_FMT:
            c(f"{ov}.{f.attr}, = {self.ctx.fmt([FIXED_FMT[k]])}.unpack_from(buf, pos)")
            c(f"pos += {fixed_size(k)}")
            if k == "uuid":
                c(f"{ov}.{f.attr} = _UC.get({ov}.{f.attr}) or _mkuuid({ov}.{f.attr})")
        elif k == "struct":
            if nullable(f, v):
                c("mk, pos = _uv(buf, pos)")
                self._struct_field(f, ov, "mk", tagged=True)
            else:
                c(f"{ov}.{f.attr}, pos = {self.fn(f.struct, v)}(buf, pos)")
        else:
            self._read_len(f"n{depth or ''}", k == "string")
            self._var_body(sd, f, f"{ov}.{f.attr}", nullable(f, v), depth)
