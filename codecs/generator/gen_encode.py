"""Emits one flat encode function per (struct, version).

Signature of every generated encoder: ``_e_<Struct>_v<N>(o, w)``, where ``w`` is a writer
callable taking bytes (``list.append``). Consecutive fixed-width fields are written with
one precompiled ``Struct.pack``; in non-flexible versions the length prefix of a following
non-nullable string/bytes/array is folded into the same call.

Fields that do not exist at the version being written must hold their default value,
unless the schema marks them ``ignorable`` (then the value is silently dropped); this is
Kafka's rule ("Attempted to write a non-default X at version N"), raised as EncodeError.
"""
from __future__ import annotations

from gen_common import (STR_ENCODE, Code, ModuleCtx, compact, is_flexible, nondefault_src,
                        nullable, status)
from gen_model import FIXED_FMT, Field, StructDef

NULL_LEN = {"string": "b'\\xff\\xff'", "other": "b'\\xff\\xff\\xff\\xff'"}


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
        saved = (getattr(self, 'sd', None), getattr(self, 'v', None),
                 getattr(self, 'spec', None), getattr(self, 'c', None))
        try:
            text = self._gen(sd, v)
        finally:
            self.sd, self.v, self.spec, self.c = saved
        name = self.bodies.get((sd.pyname, text))
        if name is None:
            name = f"_e_{sd.pyname}_v{v}"
            self.bodies[(sd.pyname, text)] = name
            self.out.append(text.replace("__FN__", name))
        self.names[key] = name
        return name

    def _gen(self, sd: StructDef, v: int) -> str:
        spec = sd.owner
        self.sd, self.v, self.spec = sd, v, spec
        c = Code()
        with c.block("def __FN__(o, w):"):
            self.c = c
            group: list[Field] = []
            for f in sd.fields:
                if status(f, v) != "regular":
                    continue
                k = f.kind
                if k in FIXED_FMT:
                    group.append(f)
                elif k == "struct":
                    self._flush(group)
                    c(f"#: {f.name}")
                    e = self.fn(f.struct, v)
                    if nullable(f, v):
                        c(f"x = o.{f.attr}")
                        c("if x is None: w(b'\\xff')")
                        with c.block("else:"):
                            c("w(b'\\x01')")
                            c(f"{e}(x, w)")
                    else:
                        c(f"{e}(o.{f.attr}, w)")
                elif not compact(f, spec, v) and not nullable(f, v):
                    # fold the int16/int32 length into the pending fixed-width group
                    names = [g.name for g in group] + [f.name]
                    c(f"#: {', '.join(names)}")
                    if k == "string":
                        c(f"x = o.{f.attr}{STR_ENCODE}")
                    else:
                        c(f"x = o.{f.attr}")
                    self._flush(group, ("h" if k == "string" else "i"), marker=False)
                    self._payload(f, "x", "w", compact_=False)
                else:
                    self._flush(group)
                    c(f"#: {f.name}")
                    c(f"x = o.{f.attr}")
                    self._var(f, "x", "w", compact(f, spec, v), nullable(f, v))
            self._flush(group)
            for f in sd.fields:
                if status(f, v) == "absent" and not f.ignorable:
                    c(f"#: {f.name}")
                    c(f"if {nondefault_src(f, 'o.' + f.attr, self.ctx)}: "
                      f"raise _absent({sd.pyname!r}, {f.name!r})")
            if is_flexible(spec, v):
                self._tag_section()
            else:
                c("#: _tagged_fields")
                c("if o._utf: raise _eerr('tagged fields are not supported "
                  f"at this version', {sd.pyname!r}, '_tagged_fields')")
        return c.text()

    def _flush(self, group: list[Field], prefix: str | None = None, marker: bool = True) -> None:
        if not group and prefix is None:
            return
        c = self.c
        chars = [FIXED_FMT[f.kind] for f in group]
        vals = [f"o.{f.attr}.bytes" if f.kind == "uuid" else f"o.{f.attr}" for f in group]
        if prefix is not None:
            chars.append(prefix)
            vals.append("len(x)")
        if marker:
            c(f"#: {', '.join(f.name for f in group)}")
        c(f"w({self.ctx.fmt(chars)}.pack({', '.join(vals)}))")
        group.clear()

    def _len(self, x: str, w: str, compact_: bool, kind: str) -> None:
        c = self.c
        if compact_:
            c(f"n = len({x}) + 1")
            c(f"{w}(_UV[n] if n < 128 else _uve(n))")
        else:
            c(f"{w}({self.ctx.fmt(['h' if kind == 'string' else 'i'])}.pack(len({x})))")

    def _var(self, f: Field, x: str, w: str, compact_: bool, is_nullable: bool) -> None:
        """x holds the value of a string/bytes/records/array field; write it."""
        c = self.c
        if is_nullable:
            null = "b'\\x00'" if compact_ else NULL_LEN["string" if f.kind == "string" else "other"]
            c(f"if {x} is None: {w}({null})")
            with c.block("else:"):
                self._var_nonnull(f, x, w, compact_)
        else:
            self._var_nonnull(f, x, w, compact_)

    def _var_nonnull(self, f: Field, x: str, w: str, compact_: bool) -> None:
        c = self.c
        if f.kind == "string":
            c(f"{x} = {x}{STR_ENCODE}")
            if compact_:
                c(f"if len({x}) > 32767: raise _eerr('string longer than 32767 bytes', "
                  f"{self.sd.pyname!r}, {f.name!r})")
        self._len(x, w, compact_, f.kind)
        self._payload(f, x, w, compact_)

    def _payload(self, f: Field, x: str, w: str, compact_: bool) -> None:
        """Write the content after the length prefix."""
        c = self.c
        k = f.kind
        if k != "array":
            c(f"{w}({x})")
            return
        ek = f.elem_kind
        if ek == "struct":
            e = self.fn(f.struct, self.v)
            with c.block(f"for v in {x}:"):
                c(f"{e}(v, {w})")
        elif ek == "uuid":
            c(f"{w}(b''.join([v.bytes for v in {x}]))")
        elif ek in FIXED_FMT:
            c(f"{w}(_pack('>%d{FIXED_FMT[ek]}' % len({x}), *{x}))")
        else:
            with c.block(f"for v in {x}:"):
                if ek == "string":
                    c(f"v = v{STR_ENCODE}")
                if compact_:
                    c("n = len(v) + 1")
                    c(f"{w}(_UV[n] if n < 128 else _uve(n))")
                else:
                    c(f"{w}({self.ctx.fmt(['h' if ek == 'string' else 'i'])}.pack(len(v)))")
                c(f"{w}(v)")

    # ------------------------------------------------------------------ tagged fields

    def _tag_section(self) -> None:
        c, sd, v = self.c, self.sd, self.v
        known = sorted((f for f in sd.fields if status(f, v) == "tagged"), key=lambda f: f.tag)
        c("#: _tagged_fields")
        if not known:
            c("u = o._utf")
            c("if u: _wr_tags(w, (), u)")
            c("else: w(b'\\x00')")
            return
        c("tg = []")
        for f in known:
            c(f"#: {f.name}")
            c(f"x = o.{f.attr}")
            with c.block(f"if {nondefault_src(f, 'x', self.ctx)}:"):
                if nullable(f, v) and not f.default_is_null:
                    c(f"if x is None: tg.append(({f.tag}, b'\\x00'))")
                    with c.block("else:"):
                        self._tagged_value(f)
                else:
                    self._tagged_value(f)
        c("#: _tagged_fields")
        c("u = o._utf")
        c("if tg or u: _wr_tags(w, tg, u)")
        c("else: w(b'\\x00')")

    def _tagged_value(self, f: Field) -> None:
        c, v = self.c, self.v
        k = f.kind
        if k in FIXED_FMT:
            val = "x.bytes" if k == "uuid" else "x"
            c(f"tg.append(({f.tag}, {self.ctx.fmt([FIXED_FMT[k]])}.pack({val})))")
            return
        c("sub = []")
        c("s = sub.append")
        if k == "struct":
            if nullable(f, v):
                c("s(b'\\x01')")
            c(f"{self.fn(f.struct, v)}(x, s)")
        else:
            self._var_nonnull(f, "x", "s", True)
        c(f"tg.append(({f.tag}, b''.join(sub)))")
