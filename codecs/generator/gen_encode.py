"""Emits one flat encode function per (struct, version).

Signature of every generated encoder: ``_e_<Struct>_v<N>(o, w)``, where ``w`` is a writer
callable taking bytes (``list.append``). Consecutive fixed-width fields are written with
one precompiled ``Struct.pack``; in non-flexible versions the length prefix of a following
non-nullable string/bytes/array is folded into the same call. Elements of struct arrays
are encoded inline in the loop (up to MAX_INLINE levels), like the decoders do; arrays of
fixed-width values are written with one precompiled ``Struct.pack`` per array that also
writes the count (for counts below 127 / 256). Strings are encoded as strict UTF-8 (the
fast path) and only on failure with ``surrogateescape`` (lone surrogates made by the
decoder from invalid bytes round-trip). Lines are preceded by ``#: Struct.Field`` markers
for the runtime's error messages.

Fields that do not exist at the version being written must hold their default value,
unless the schema marks them ``ignorable`` (then the value is silently dropped); this is
Kafka's rule ("Attempted to write a non-default X at version N"), raised as EncodeError.
"""
from __future__ import annotations

from gen_common import (Code, ModuleCtx, compact, is_flexible, nondefault_src, nullable,
                        status)
from gen_model import FIXED_FMT, Field, StructDef

MAX_INLINE = 3
NULL_LEN = {"string": "b'\\xff\\xff'", "other": "b'\\xff\\xff\\xff\\xff'"}
STR_FALLBACK = ".encode('utf-8', 'surrogateescape')"


class EncodeEmitter:
    def __init__(self, ctx: ModuleCtx, out: list[str]):
        self.ctx = ctx
        self.out = out
        self.names: dict[tuple[int, int], str] = {}
        self.bodies: dict[tuple[str, str], str] = {}

    def fn(self, sd: StructDef, v: int) -> str:
        key = (id(sd), v)
        if key in self.names:
            return self.names[key]
        saved = (getattr(self, 'v', None), getattr(self, 'spec', None),
                 getattr(self, 'c', None))
        try:
            text = self._gen(sd, v)
        finally:
            self.v, self.spec, self.c = saved
        name = self.bodies.get((sd.pyname, text))
        if name is None:
            name = f"_e_{sd.pyname}_v{v}"
            self.bodies[(sd.pyname, text)] = name
            self.out.append(text.replace("__FN__", name))
        self.names[key] = name
        return name

    def _gen(self, sd: StructDef, v: int) -> str:
        self.v, self.spec = v, sd.owner
        c = self.c = Code()
        with c.block("def __FN__(o, w):"):
            self._body(sd, "o", 0)
        return c.text()

    # ------------------------------------------------------------------ struct body

    def _body(self, sd: StructDef, ov: str, depth: int) -> None:
        """Write the fields of sd held in variable ov."""
        c, v, spec = self.c, self.v, self.spec
        sx = str(depth) if depth else ""
        x = f"x{sx}"
        group: list[Field] = []
        for f in sd.fields:
            if status(f, v) != "regular":
                continue
            k = f.kind
            if k in FIXED_FMT:
                group.append(f)
            elif k == "struct":
                self._flush(sd, ov, group)
                c(f"#: {sd.pyname}.{f.name}")
                e = self.fn(f.struct, v)
                if nullable(f, v):
                    c(f"{x} = {ov}.{f.attr}")
                    c(f"if {x} is None: w(b'\\xff')")
                    with c.block("else:"):
                        c("w(b'\\x01')")
                        c(f"{e}({x}, w)")
                else:
                    c(f"{e}({ov}.{f.attr}, w)")
            elif (not compact(f, spec, v) and not nullable(f, v)
                  and not (k == "array" and f.elem_kind in FIXED_FMT)):
                # fold the int16/int32 length into the pending fixed-width group
                names = [g.name for g in group] + [f.name]
                c(f"#: {sd.pyname}.{', '.join(names)}")
                if k == "string":
                    self._str_encode(x, f"{ov}.{f.attr}")
                else:
                    c(f"{x} = {ov}.{f.attr}")
                self._flush(sd, ov, group, ("h" if k == "string" else "i", x), marker=False)
                self._payload(sd, f, x, depth)
            else:
                self._flush(sd, ov, group)
                c(f"#: {sd.pyname}.{f.name}")
                c(f"{x} = {ov}.{f.attr}")
                self._var(sd, f, x, compact(f, spec, v), nullable(f, v), depth)
        self._flush(sd, ov, group)
        for f in sd.fields:
            if status(f, v) == "absent" and not f.ignorable:
                c(f"#: {sd.pyname}.{f.name}")
                c(f"if {nondefault_src(f, f'{ov}.{f.attr}', self.ctx)}: "
                  f"raise _absent({sd.pyname!r}, {f.name!r})")
        if is_flexible(spec, v):
            self._tag_section(sd, ov, depth)
        else:
            c(f"#: {sd.pyname}._tagged_fields")
            c(f"if {ov}._utf: raise _eerr('tagged fields are not supported "
              f"at this version', {sd.pyname!r}, '_tagged_fields')")

    def _flush(self, sd: StructDef, ov: str, group: list[Field], prefix=None,
               marker: bool = True) -> None:
        """One pack for the fixed fields in group (+ optional (char, var) length prefix)."""
        if not group and prefix is None:
            return
        c = self.c
        chars = [FIXED_FMT[f.kind] for f in group]
        vals = [f"{ov}.{f.attr}.bytes" if f.kind == "uuid" else f"{ov}.{f.attr}" for f in group]
        if prefix is not None:
            chars.append(prefix[0])
            vals.append(f"len({prefix[1]})")
        if marker:
            c(f"#: {sd.pyname}.{', '.join(f.name for f in group)}")
        c(f"w({self.ctx.fmt(chars)}.pack({', '.join(vals)}))")
        group.clear()

    def _str_encode(self, x: str, src: str) -> None:
        """x = src encoded as UTF-8 (strict fast path, surrogateescape fallback)."""
        c = self.c
        c(f"try: {x} = {src}.encode()")
        c(f"except UnicodeEncodeError: {x} = {src}{STR_FALLBACK}")

    def _var(self, sd: StructDef, f: Field, x: str, compact_: bool, is_nullable: bool,
             depth: int) -> None:
        """x holds the value of a string/bytes/records/array field; write it."""
        c = self.c
        if is_nullable:
            null = "b'\\x00'" if compact_ else NULL_LEN["string" if f.kind == "string" else "other"]
            c(f"if {x} is None: w({null})")
            with c.block("else:"):
                self._var_nonnull(sd, f, x, compact_, depth)
        else:
            self._var_nonnull(sd, f, x, compact_, depth)

    def _var_nonnull(self, sd: StructDef, f: Field, x: str, compact_: bool, depth: int,
                     w: str = "w") -> None:
        c = self.c
        sx = str(depth) if depth else ""
        n = f"n{sx}"
        k = f.kind
        if k == "array" and f.elem_kind in FIXED_FMT and f.elem_kind != "uuid":
            self._fixed_array(f, x, n, compact_, w)
            return
        if k == "string":
            self._str_encode(x, x)
            if compact_:
                c(f"{n} = len({x})")
                c(f"if {n} < 127: {w}(_UV[{n} + 1])")
                c(f"elif {n} > 32767: raise _eerr('string longer than 32767 bytes', "
                  f"{sd.pyname!r}, {f.name!r})")
                c(f"else: {w}(_uve({n} + 1))")
            else:
                c(f"{w}({self.ctx.fmt(['h'])}.pack(len({x})))")
        elif compact_:
            c(f"{n} = len({x}) + 1")
            c(f"{w}(_UV[{n}] if {n} < 128 else _uve({n}))")
        else:
            c(f"{w}({self.ctx.fmt(['i'])}.pack(len({x})))")
        self._payload(sd, f, x, depth, w)

    def _fixed_array(self, f: Field, x: str, n: str, compact_: bool, w: str) -> None:
        """Count and elements of an array of fixed-width numbers, one pack call."""
        c = self.c
        ch = FIXED_FMT[f.elem_kind]
        c(f"{n} = len({x})")
        if compact_:
            c(f"if {n} < 127: {w}({self.ctx.packarr(ch, True)}[{n}]({n} + 1, *{x}))")
            with c.block("else:"):
                c(f"{w}(_uve({n} + 1))")
                c(f"{w}(_pack('>%d{ch}' % {n}, *{x}))")
        else:
            c(f"{w}({self.ctx.packarr(ch, False)}[{n}]({n}, *{x}) if {n} < 256 "
              f"else _pack('>i%d{ch}' % {n}, {n}, *{x}))")

    def _payload(self, sd: StructDef, f: Field, x: str, depth: int, w: str = "w") -> None:
        """Write the content after the length prefix."""
        c = self.c
        k = f.kind
        if k != "array":
            c(f"{w}({x})")
            return
        sx = str(depth) if depth else ""
        ek = f.elem_kind
        if ek == "struct":
            if depth < MAX_INLINE and w == "w":
                child = f"o{depth + 1}"
                with c.block(f"for {child} in {x}:"):
                    self._body(f.struct, child, depth + 1)
            else:
                e = self.fn(f.struct, self.v)
                with c.block(f"for v{sx} in {x}:"):
                    c(f"{e}(v{sx}, {w})")
        elif ek == "uuid":
            c(f"{w}(b''.join([v.bytes for v in {x}]))")
        elif ek in FIXED_FMT:  # non-compact, length already written
            c(f"{w}(_pack('>%d{FIXED_FMT[ek]}' % len({x}), *{x}))")
        else:
            v = f"v{sx}"
            m = f"m{sx}"
            compact_ = compact(f, self.spec, self.v)
            with c.block(f"for {v} in {x}:"):
                if ek == "string":
                    self._str_encode(v, v)
                if compact_:
                    c(f"{m} = len({v}) + 1")
                    c(f"{w}(_UV[{m}] if {m} < 128 else _uve({m}))")
                else:
                    c(f"{w}({self.ctx.fmt(['h' if ek == 'string' else 'i'])}.pack(len({v})))")
                c(f"{w}({v})")

    # ------------------------------------------------------------------ tagged fields

    def _tag_section(self, sd: StructDef, ov: str, depth: int) -> None:
        c, v = self.c, self.v
        sx = str(depth) if depth else ""
        u, tg, x = f"u{sx}", f"tg{sx}", f"x{sx}"
        known = sorted((f for f in sd.fields if status(f, v) == "tagged"), key=lambda f: f.tag)
        c(f"#: {sd.pyname}._tagged_fields")
        if not known:
            c(f"{u} = {ov}._utf")
            c(f"if {u}: _wr_tags(w, (), {u})")
            c("else: w(b'\\x00')")
            return
        c(f"{tg} = []")
        for f in known:
            c(f"#: {sd.pyname}.{f.name}")
            c(f"{x} = {ov}.{f.attr}")
            with c.block(f"if {nondefault_src(f, x, self.ctx)}:"):
                if nullable(f, v) and not f.default_is_null:
                    c(f"if {x} is None: {tg}.append(({f.tag}, b'\\x00'))")
                    with c.block("else:"):
                        self._tagged_value(sd, f, x, tg, depth)
                else:
                    self._tagged_value(sd, f, x, tg, depth)
        c(f"#: {sd.pyname}._tagged_fields")
        c(f"{u} = {ov}._utf")
        c(f"if {tg} or {u}: _wr_tags(w, {tg}, {u})")
        c("else: w(b'\\x00')")

    def _tagged_value(self, sd: StructDef, f: Field, x: str, tg: str, depth: int) -> None:
        c, v = self.c, self.v
        k = f.kind
        if k in FIXED_FMT:
            val = f"{x}.bytes" if k == "uuid" else x
            c(f"{tg}.append(({f.tag}, {self.ctx.fmt([FIXED_FMT[k]])}.pack({val})))")
            return
        c("sub = []")
        c("s = sub.append")
        if k == "struct":
            if nullable(f, v):
                c("s(b'\\x01')")
            c(f"{self.fn(f.struct, v)}({x}, s)")
        else:
            self._var_nonnull(sd, f, x, True, depth, w="s")
        c(f"{tg}.append(({f.tag}, b''.join(sub)))")
