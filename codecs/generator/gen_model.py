"""Schema model for the kcodec generator: loads Kafka's JSON message schemas.

The files are JSON with whole-line ``//`` comments.  This module only parses and
normalises them (versions, defaults, names); code emission lives in gen_emit.py.
"""
from __future__ import annotations

import base64
import json
import keyword
import re
import uuid
from dataclasses import dataclass, field as dfield
from pathlib import Path

MAX_VERSION = 32767

FIXED_FMT = {
    "bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i",
    "uint32": "I", "int64": "q", "float64": "d", "uuid": "16s",
}
FIXED_SIZE = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4,
              "uint32": 4, "int64": 8, "float64": 8, "uuid": 16}
VAR_KINDS = ("string", "bytes", "records")
PRIMS = set(FIXED_FMT) | set(VAR_KINDS)


class SchemaError(Exception):
    pass


@dataclass(frozen=True)
class Versions:
    lo: int
    hi: int  # inclusive; lo > hi means empty

    @staticmethod
    def parse(text, default=None) -> "Versions":
        if text is None:
            if default is None:
                raise SchemaError("missing versions")
            return default
        text = str(text).strip()
        if text == "none":
            return NONE
        if text.endswith("+"):
            return Versions(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            a, b = text.split("-", 1)
            return Versions(int(a), int(b))
        return Versions(int(text), int(text))

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __contains__(self, v: int) -> bool:
        return self.lo <= v <= self.hi

    def intersect(self, o: "Versions") -> "Versions":
        r = Versions(max(self.lo, o.lo), min(self.hi, o.hi))
        return NONE if r.empty else r

    def covers(self, o: "Versions") -> bool:
        return o.empty or (self.lo <= o.lo and o.hi <= self.hi)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = Versions(0, -1)


def snake_case(name: str) -> str:
    """``throttleTimeMs`` -> ``throttle_time_ms``, ``KRaftVersion`` -> ``k_raft_version``."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    if keyword.iskeyword(s) or s.startswith("_"):
        s += "_"
    return s


def lower_first(name: str) -> str:
    """Kafka's camelCaseName (the JSON converter key): first character lower-cased."""
    return name[:1].lower() + name[1:]


def load_json_with_comments(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("//")]
    return json.loads("\n".join(lines))


@dataclass
class Field:
    name: str
    type: str
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default_raw: str
    ignorable: bool
    flexible_override: Versions | None
    about: str
    entity_type: str | None
    map_key: bool
    zero_copy: bool
    struct: "StructDef | None" = None  # struct or element struct
    attr: str = ""
    json: str = ""

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def elem(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def kind(self) -> str:
        """One of the primitive kinds, 'struct' or 'array'."""
        if self.is_array:
            return "array"
        return self.type if self.type in PRIMS else "struct"

    @property
    def elem_kind(self) -> str | None:
        if not self.is_array:
            return None
        return self.elem if self.elem in PRIMS else "struct"

    @property
    def default_is_null(self) -> bool:
        return self.default_raw == "null"

    def default_value(self):
        """The Python default (immutable values); 'LIST'/'STRUCT' markers for fresh containers."""
        k, d = self.kind, self.default_raw
        if k == "bool":
            if d == "":
                return False
            if d.lower() in ("true", "false"):
                return d.lower() == "true"
            raise SchemaError(f"bad bool default {d!r} for {self.name}")
        if k in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            if d == "":
                return 0
            v = int(d[2:], 16) if d.startswith("0x") else int(d)
            lo, hi = {"int8": (-128, 127), "int16": (-32768, 32767), "uint16": (0, 65535),
                      "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
                      "int64": (-2**63, 2**63 - 1)}[k]
            if not lo <= v <= hi:
                raise SchemaError(f"default out of range for {self.name}")
            return v
        if k == "float64":
            return float(d) if d else 0.0
        if k == "uuid":
            if d == "":
                return uuid.UUID(int=0)
            return uuid.UUID(bytes=base64.urlsafe_b64decode(d + "=="))
        if k == "string":
            if d == "null":
                self._check_null_default()
                return None
            return d
        if k == "bytes":
            if d == "null":
                self._check_null_default()
                return None
            if d:
                raise SchemaError(f"bad bytes default for {self.name}")
            return b""
        if k == "records":
            # Kafka's default is null; we use b"" when the field is not nullable in all
            # of its versions so that a default-constructed object encodes.
            return None if self.nullable.covers(self.versions) else b""
        if k == "struct":
            if d == "null":
                self._check_null_default()
                return None
            if d:
                raise SchemaError(f"bad struct default for {self.name}")
            return "STRUCT"
        if k == "array":
            if d == "null":
                self._check_null_default()
                return None
            if d:
                raise SchemaError(f"bad array default for {self.name}")
            return "LIST"
        raise SchemaError(f"unknown kind {k}")

    def _check_null_default(self):
        if not self.nullable.covers(self.versions):
            raise SchemaError(f"null default for {self.name} which is not nullable in all versions")


@dataclass
class StructDef:
    name: str             # the JSON type name
    fields: list[Field]
    versions: Versions
    owner: "MessageSpec"
    pyname: str = ""
    is_message: bool = False
    used_versions: set[int] = dfield(default_factory=set)


@dataclass
class MessageSpec:
    path: Path
    name: str
    type: str
    api_key: int | None
    valid: Versions
    flexible: Versions
    latest_unstable: bool
    listeners: tuple[str, ...]
    struct: StructDef = None  # type: ignore[assignment]
    structs: dict[str, StructDef] = dfield(default_factory=dict)  # by JSON name

    @property
    def unstable_versions(self) -> tuple[int, ...]:
        if self.latest_unstable and not self.valid.empty:
            return (self.valid.hi,)
        return ()


def _parse_field(d: dict, spec: MessageSpec, pending: list) -> Field:
    tagged = Versions.parse(d.get("taggedVersions"), NONE)
    versions = Versions.parse(d.get("versions"), None if tagged.empty else tagged)
    fo = d.get("flexibleVersions")
    dflt = d.get("default", "")
    if dflt is None:            # JSON null: no default, as Kafka's FieldSpec reads it (not "null")
        dflt = ""
    if isinstance(dflt, bool):
        dflt = "true" if dflt else "false"
    f = Field(
        name=d["name"], type=d["type"], versions=versions,
        nullable=Versions.parse(d.get("nullableVersions"), NONE),
        tagged=tagged, tag=d.get("tag"), default_raw=str(dflt),
        ignorable=bool(d.get("ignorable", False)),
        flexible_override=Versions.parse(fo) if fo else None,
        about=d.get("about", ""), entity_type=d.get("entityType"),
        map_key=bool(d.get("mapKey", False)), zero_copy=bool(d.get("zeroCopy", False)),
    )
    f.attr = snake_case(f.name)
    f.json = lower_first(f.name)
    if f.tag is not None and tagged.empty:
        raise SchemaError(f"{spec.name}.{f.name}: tag without taggedVersions")
    if "fields" in d:
        sd = StructDef(name=f.elem, fields=[], versions=versions, owner=spec)
        if f.elem in spec.structs:
            raise SchemaError(f"{spec.name}: struct {f.elem} defined twice")
        spec.structs[f.elem] = sd
        sd.fields = [_parse_field(x, spec, pending) for x in d["fields"]]
        f.struct = sd
    elif f.kind == "struct" or f.elem_kind == "struct":
        pending.append(f)
    return f


def load_spec(path: Path) -> MessageSpec:
    d = load_json_with_comments(path)
    listeners = tuple(d.get("listeners", ()))
    spec = MessageSpec(
        path=path, name=d["name"], type=d["type"], api_key=d.get("apiKey"),
        valid=Versions.parse(d["validVersions"]),
        flexible=Versions.parse(d.get("flexibleVersions", "none")),
        latest_unstable=bool(d.get("latestVersionUnstable", False)),
        listeners=listeners,
    )
    pending: list[Field] = []
    for c in d.get("commonStructs", []):
        sd = StructDef(name=c["name"], fields=[], versions=Versions.parse(c.get("versions", "0+")),
                       owner=spec)
        spec.structs[c["name"]] = sd
    for c in d.get("commonStructs", []):
        spec.structs[c["name"]].fields = [_parse_field(x, spec, pending) for x in c["fields"]]
    top = StructDef(name=spec.name, fields=[], versions=spec.valid, owner=spec, is_message=True)
    top.fields = [_parse_field(x, spec, pending) for x in d.get("fields", [])]
    spec.struct = top
    for f in pending:
        if f.elem not in spec.structs:
            raise SchemaError(f"{spec.name}.{f.name}: unknown struct type {f.elem}")
        f.struct = spec.structs[f.elem]
    # reachability: which versions each struct is decoded/encoded at
    if not spec.valid.empty:
        for v in range(spec.valid.lo, spec.valid.hi + 1):
            _mark(top, v)
    for sd in [top, *spec.structs.values()]:
        for f in sd.fields:
            f.default_value()  # validates defaults
            fx = f.flexible_override
            for v in sd.used_versions:
                if v in f.tagged and not ((fx or spec.flexible).lo <= v <= (fx or spec.flexible).hi):
                    raise SchemaError(f"{spec.name}.{f.name}: tagged in non-flexible version {v}")
    return spec


def _mark(sd: StructDef, v: int) -> None:
    if v in sd.used_versions:
        return
    if sd is not sd.owner.struct and v not in sd.versions:
        return
    sd.used_versions.add(v)
    for f in sd.fields:
        if f.struct is not None and v in f.versions:
            _mark(f.struct, v)


def load_all(schema_dir: Path) -> list[MessageSpec]:
    out = []
    for p in sorted(schema_dir.glob("*.json")):
        if p.name in ("PROVENANCE.json", "protocol-vocabulary.json"):   # not message schemas
            continue
        out.append(load_spec(p))
    return out


def module_name(spec: MessageSpec) -> str:
    """Per-API module (metadata.py) for request/response; per-file module otherwise."""
    n = spec.name
    if spec.type in ("request", "response"):
        n = re.sub(r"(Request|Response)$", "", n)
    return snake_case(n).rstrip("_")


def api_name(spec: MessageSpec) -> str:
    return re.sub(r"(Request|Response)$", "", spec.name)


def assign_pynames(specs: list[MessageSpec]) -> None:
    """Class names: the JSON type; if two messages in one module share a struct name,
    both are prefixed with their message name (e.g. VoteRequestTopicData)."""
    taken = {s.name for s in specs}
    counts: dict[str, int] = {}
    for s in specs:
        for n in s.structs:
            counts[n] = counts.get(n, 0) + 1
    used = set(taken)
    for s in specs:
        s.struct.pyname = s.name
        for n, sd in s.structs.items():
            py = n if counts[n] == 1 and n not in taken else s.name + n
            base, i = py, 2
            while py in used:
                py = f"{base}{i}"
                i += 1
            used.add(py)
            sd.pyname = py
