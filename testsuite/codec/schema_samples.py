"""Random sample messages built straight from Kafka's JSON schemas (test helper).

``random_json(schema, version, rnd)`` returns a message in Kafka's JsonConverter format
(JSON keys are the schema field names with a lower-case first letter, bytes/records are
base64, uuids are Kafka's 22-character base64url form) holding only the fields that
exist at that version.  Independent of kcodec on purpose: the cross-check feeds the same
JSON to kcodec and to Kafka's own generated Java classes.
"""

from __future__ import annotations

import base64
import json
import random
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_CANDIDATES = [
    ROOT / "codecs" / "schemas",
    ROOT.parent / "shared" / "kafka-schemas" / "4.3.1",
]
MAX_VERSION = 0x7FFF
INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1), "uint32": (0, (1 << 32) - 1),
}
PRIMITIVES = set(INT_RANGES) | {"bool", "float64", "string", "bytes", "records", "uuid"}
_STRINGS = ["", "a", "topic-1", "grp.with-dots_and_underscores", "é", "漢字", "😀x", "x" * 40,
            "long-" * 40]  # 200 bytes: a two-byte compact length
_FLOATS = [0.0, 0.5, -1.25, 1024.75, 1e-3]


def schema_dir() -> Path:
    for d in _CANDIDATES:
        if d.is_dir() and any(d.glob("*Request.json")):
            return d
    raise FileNotFoundError(f"no Kafka schema directory among {_CANDIDATES}")


@lru_cache(maxsize=None)
def load_schemas() -> dict[str, dict]:
    """name -> schema dict, for every message/header/data schema."""
    out = {}
    for p in sorted(schema_dir().glob("*.json")):
        text = "\n".join(line for line in p.read_text().splitlines()
                         if not line.lstrip().startswith("//"))
        try:
            s = json.loads(text)
        except ValueError:
            continue
        if isinstance(s, dict) and "name" in s and "fields" in s:
            out[s["name"]] = s
    return out


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def in_versions(spec: str | None, v: int) -> bool:
    r = parse_versions(spec)
    return r is not None and r[0] <= v <= r[1]


def valid_versions(schema: dict) -> list[int]:
    r = parse_versions(schema.get("validVersions"))
    return [] if r is None else list(range(r[0], r[1] + 1))


def json_name(field: dict) -> str:
    n = field["name"]
    return n[:1].lower() + n[1:]


def uuid_str(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class Generator:
    """Random JsonConverter-format values for one schema."""

    def __init__(self, schema: dict, rnd: random.Random, max_items: int = 3):
        self.schema = schema
        self.common = {s["name"]: s for s in schema.get("commonStructs", [])}
        self.rnd = rnd
        self.max_items = max_items

    def message(self, version: int) -> dict:
        return self.struct(self.schema["fields"], version, 0)

    def struct(self, fields: list, v: int, depth: int) -> dict:
        out = {}
        for f in fields:
            if not in_versions(f.get("versions"), v):
                continue
            if "tag" in f and not in_versions(f.get("taggedVersions", f.get("versions")), v):
                continue
            out[json_name(f)] = self.value(f, v, depth)
        return out

    def _fields_of(self, f: dict, type_name: str) -> list:
        if "fields" in f:
            return f["fields"]
        return self.common[type_name]["fields"]

    def value(self, f: dict, v: int, depth: int):
        r = self.rnd
        t = f["type"]
        if in_versions(f.get("nullableVersions"), v) and r.random() < 0.2:
            return None
        if t.startswith("[]"):
            elem = t[2:]
            n = r.choice([0, 1, 1, 2, self.max_items]) if depth < 3 else r.choice([0, 1])
            if elem in PRIMITIVES:
                if depth < 2 and r.random() < 0.05:
                    n = 130  # a two-byte compact array length
                return [self.primitive(elem) for _ in range(n)]
            fields = self._fields_of(f, elem)
            return [self.struct(fields, v, depth + 1) for _ in range(n)]
        if t in PRIMITIVES:
            return self.primitive(t)
        return self.struct(self._fields_of(f, t), v, depth + 1)

    def primitive(self, t: str):
        r = self.rnd
        if t in INT_RANGES:
            lo, hi = INT_RANGES[t]
            return r.choice([lo, hi, 0, -1 if lo < 0 else 1, r.randint(lo, hi),
                             r.randint(max(lo, -300), min(hi, 300))])
        if t == "bool":
            return r.random() < 0.5
        if t == "float64":
            return r.choice(_FLOATS)
        if t == "string":
            return r.choice(_STRINGS)
        if t in ("bytes", "records"):
            return base64.b64encode(r.randbytes(r.choice([0, 1, 7, 130]))).decode()
        if t == "uuid":
            return uuid_str(r.choice([bytes(16), r.randbytes(16)]))
        raise ValueError(t)


def random_json(schema: dict, version: int, rnd: random.Random) -> dict:
    return Generator(schema, rnd).message(version)


def records_paths(schema: dict) -> list[tuple[str, ...]]:
    """JSON key paths (through arrays/structs) of every ``records`` field of a schema."""
    common = {s["name"]: s for s in schema.get("commonStructs", [])}
    out: list[tuple[str, ...]] = []

    def walk(fields, prefix):
        for f in fields:
            t = f["type"].removeprefix("[]")
            path = prefix + (json_name(f),)
            if t == "records":
                out.append(path)
            elif t not in PRIMITIVES:
                walk(f.get("fields") or common[t]["fields"], path)

    walk(schema["fields"], ())
    return out


def blank_records(doc, paths) -> object:
    """Copy of ``doc`` with every non-null records value replaced by "" (Kafka's
    JsonConverter writes records as an empty binary node)."""
    doc = json.loads(json.dumps(doc))

    def blank(node, path):
        if node is None:
            return
        if isinstance(node, list):
            for item in node:
                blank(item, path)
            return
        key = path[0]
        if key not in node:
            return
        if len(path) == 1:
            if node[key] is not None:
                node[key] = ""
        else:
            blank(node[key], path[1:])

    for p in paths:
        blank(doc, p)
    return doc
