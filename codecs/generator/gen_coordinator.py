"""The group coordinator's records: kcodec/generated/_coordinator_records.py from the pinned schemas.

codecs/schemas/coordinator/ holds the kafka-group-coordinator jar's common/message/*.json
(scripts/pin-schemas): the keys and values of the records Kafka writes to __consumer_offsets,
"type" coordinator-key / coordinator-value, "apiKey" the record type. Each schema gets its own
module like any data schema (generate.py); this file pairs them by record type as Kafka's
CoordinatorRecordTypeGenerator does (one key and one value per type, the name the key's without
"Key"; CoordinatorRecordSerde writes keys at version 0 only) and writes the index
kcodec.coordinator_records reads: KEYS, VALUES, VALUE_VERSIONS, NAMES.
"""
from __future__ import annotations

import json
from pathlib import Path

from gen_model import MessageSpec, Versions, load_all, module_name
from gen_module import HEADER

COORDINATOR_DIR = "coordinator"          # below the schema directory
KINDS = {"coordinator-key": "key", "coordinator-value": "value"}


def load_coordinator(schema_dir: Path) -> tuple[list[MessageSpec], str | None]:
    """The coordinator record schemas and the Kafka version of their pin ([] when not pinned)."""
    d = schema_dir / COORDINATOR_DIR
    if not d.is_dir():
        return [], None
    specs = load_all(d)
    other = sorted(s.path.name for s in specs if s.type not in KINDS)
    if other:
        raise SystemExit(f"not coordinator-key/-value schemas in {d}: {other}")
    prov = d / "PROVENANCE.json"
    version = json.loads(prov.read_text()).get("kafka_version") if prov.exists() else None
    return specs, version


def record_types(specs: list[MessageSpec]) -> dict[int, tuple[MessageSpec, MessageSpec]]:
    """{record type: (key spec, value spec)}, checked as Kafka's generator and serde check them."""
    pairs: dict[int, dict[str, MessageSpec]] = {}
    for s in specs:
        if s.api_key is None:
            raise SystemExit(f"{s.path.name}: a coordinator record schema without apiKey")
        kind = KINDS[s.type]
        mine = pairs.setdefault(s.api_key, {})
        if kind in mine:
            raise SystemExit(f"coordinator record type {s.api_key} has two {kind}s: "
                             f"{mine[kind].path.name}, {s.path.name}")
        mine[kind] = s
    out = {}
    for rtype, mine in sorted(pairs.items()):
        for kind in ("key", "value"):
            if kind not in mine:
                raise SystemExit(f"coordinator record type {rtype} has no {kind}")
        key, value = mine["key"], mine["value"]
        if key.valid != Versions(0, 0):
            raise SystemExit(f"{key.path.name}: a key must have validVersions 0, not {key.valid}")
        if value.valid.empty:
            raise SystemExit(f"{value.path.name}: a value without valid versions")
        if key.name.removesuffix("Key") != value.name.removesuffix("Value"):
            raise SystemExit(f"record type {rtype}: key {key.name} and value {value.name} differ")
        out[rtype] = (key, value)
    return out


def gen_coordinator_index(types: dict[int, tuple[MessageSpec, MessageSpec]],
                          kafka_version: str | None) -> str:
    imports = sorted((module_name(s), s.name) for pair in types.values() for s in pair)
    lines = [
        HEADER,
        "# Source: codecs/schemas/coordinator/ (kafka-group-coordinator"
        + (f" {kafka_version}" if kafka_version else "") + ").",
        '"""The group coordinator\'s records by record type (the keys\' and values\' apiKey);',
        'kcodec.coordinator_records reads them."""',
        "",
        *[f"from .{mod} import {cls}" for mod, cls in imports],
        "",
        f"KAFKA_VERSION = {kafka_version!r}",
        "",
        "# record type: key class (written and read at version 0)",
        "KEYS = {",
        *[f"    {t}: {key.name}," for t, (key, _) in types.items()],
        "}",
        "",
        "# record type: value class",
        "VALUES = {",
        *[f"    {t}: {value.name}," for t, (_, value) in types.items()],
        "}",
        "",
        "# record type: (min, max) valid value versions",
        "VALUE_VERSIONS = {",
        *[f"    {t}: ({value.valid.lo}, {value.valid.hi})," for t, (_, value) in types.items()],
        "}",
        "",
        "# record type: name (the value schema's without \"Value\")",
        "NAMES = {",
        *[f"    {t}: {value.name.removesuffix('Value')!r}," for t, (_, value) in types.items()],
        "}",
    ]
    return "\n".join(lines) + "\n"
