#!/usr/bin/env python3
"""kcodec generator: Kafka JSON message schemas -> codecs/kcodec/generated/*.py.

Usage:
    python codecs/generator/generate.py [--schemas DIR] [--out DIR] [--check]

One module per API (request + response, e.g. metadata.py), one module per header/data
schema (request_header.py, consumer_protocol_subscription.py, ...), plus _index.py
(the table kcodec.api is built from), protocol_names.py (ApiKey / Error vocabulary, from
the jar's ApiKeys/Errors in schemas/protocol-vocabulary.json, see gen_protocol.py) and __init__.py.
The group coordinator's record schemas (schemas/coordinator/, see gen_coordinator.py) get one module
each too (group_metadata_value.py, ...) and their index _coordinator_records.py. --check compares
instead of writing and exits 1 when the committed files are stale (run scripts/regenerate).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_model import MessageSpec, api_name, assign_pynames, load_all, module_name  # noqa: E402
from gen_module import HEADER, gen_module  # noqa: E402
from gen_protocol import gen_protocol_names  # noqa: E402
from gen_coordinator import COORDINATOR_DIR, gen_coordinator_index, load_coordinator, record_types  # noqa: E402

DEFAULT_SCHEMAS = HERE.parent / "schemas"
DEFAULT_OUT = HERE.parent / "kcodec" / "generated"


def plan(specs: list[MessageSpec]):
    """Group specs into modules; returns (modules: name -> [specs], skipped: file -> reason)."""
    modules: dict[str, list[MessageSpec]] = defaultdict(list)
    skipped: dict[str, str] = {}
    for s in specs:
        if s.valid.empty:
            skipped[s.path.name] = "validVersions is none (API removed from this Kafka version)"
            continue
        modules[module_name(s)].append(s)
    for name, group in modules.items():
        group.sort(key=lambda s: {"request": 0, "response": 1}.get(s.type, 2))
        if len(group) > 1 and {s.type for s in group} != {"request", "response"}:
            raise SystemExit(f"module name clash for {name}: {[s.path.name for s in group]}")
    return dict(sorted(modules.items())), skipped


def gen_index(modules: dict[str, list[MessageSpec]], skipped: dict[str, str],
              specs: list[MessageSpec], kafka_version: str | None) -> str:
    apis, other, removed = [], [], {}
    for mod, group in modules.items():
        if group[0].type in ("request", "response"):
            req = next(s for s in group if s.type == "request")
            resp = next(s for s in group if s.type == "response")
            if (req.valid, req.flexible) != (resp.valid, resp.flexible):
                raise SystemExit(f"request/response version mismatch in {mod}")
            fmin = None if req.flexible.empty else req.flexible.lo
            unstable = tuple(sorted(set(req.unstable_versions) | set(resp.unstable_versions)))
            apis.append((req.api_key, f"    {req.api_key}: ({api_name(req)!r}, {mod!r}, "
                         f"{req.name!r}, {resp.name!r}, ({req.valid.lo}, {req.valid.hi}), "
                         f"{fmin!r}, {unstable!r}, {req.listeners!r}),"))
        else:
            for s in group:
                fmin = None if s.flexible.empty else s.flexible.lo
                other.append(f"    {s.name!r}: ({mod!r}, {s.type!r}, ({s.valid.lo}, {s.valid.hi}), "
                             f"{fmin!r}),")
    for s in specs:
        if s.valid.empty and s.api_key is not None:
            removed[s.api_key] = api_name(s)
    lines = [
        HEADER,
        '"""Index of the generated modules; kcodec.api builds its public tables from it."""',
        "",
        f"KAFKA_VERSION = {kafka_version!r}",
        "",
        "# api_key: (name, module, request class, response class, (min, max) valid versions,",
        "#           first flexible version or None, unstable versions, listeners)",
        "APIS = {",
        *[row for _, row in sorted(apis)],
        "}",
        "",
        "# API keys whose schemas have validVersions none in this Kafka version.",
        f"REMOVED_APIS = {dict(sorted(removed.items()))!r}",
        "",
        "# header and data schemas: name: (module, type, (min, max), first flexible version or None)",
        "OTHER = {",
        *other,
        "}",
        "",
        "# schema files for which no module is generated, and why",
        "SKIPPED = {",
        *[f"    {k!r}: {v!r}," for k, v in sorted(skipped.items())],
        "}",
    ]
    return "\n".join(lines) + "\n"


def generate(schema_dir: Path) -> dict[str, str]:
    """Returns {file name: content} of the whole generated package."""
    specs = load_all(schema_dir)
    kafka_version = None
    prov = schema_dir / "PROVENANCE.json"
    if prov.exists():
        kafka_version = json.loads(prov.read_text()).get("kafka_version")
    modules, skipped = plan(specs)
    files: dict[str, str] = {}
    for mod, group in modules.items():
        assign_pynames(group)
        files[f"{mod}.py"] = gen_module(group, kafka_version)
    files["_index.py"] = gen_index(modules, skipped, specs, kafka_version)
    api_keys = {s.api_key: api_name(s) for s in specs if s.type == "request"}
    files["protocol_names.py"] = gen_protocol_names(api_keys, schema_dir, kafka_version)
    coord_specs, coord_version = load_coordinator(schema_dir)
    coord_modules = {}
    if coord_specs:
        types = record_types(coord_specs)
        coord_modules, _ = plan(coord_specs)
        clash = sorted(set(coord_modules) & set(modules))
        if clash:
            raise SystemExit(f"coordinator record modules clash with protocol modules: {clash}")
        for mod, group in coord_modules.items():
            assign_pynames(group)
            files[f"{mod}.py"] = gen_module(group, coord_version, f"codecs/schemas/{COORDINATOR_DIR}/")
        files["_coordinator_records.py"] = gen_coordinator_index(types, coord_version)
    names = ", ".join(sorted(m for m in modules))
    files["__init__.py"] = (
        f"{HEADER}\n"
        '"""Generated Kafka wire codec modules (one per API, header and data schema).\n\n'
        "Import them lazily through kcodec.api; regenerate with scripts/regenerate.\n"
        "COORDINATOR_MODULES: one per group coordinator record schema (kcodec.coordinator_records).\n"
        '"""\n'
        f"MODULES = {tuple(sorted(modules))!r}\n"
        f"COORDINATOR_MODULES = {tuple(sorted(coord_modules))!r}\n"
    )
    del names
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemas", type=Path, default=DEFAULT_SCHEMAS)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="only report whether --out is stale")
    args = ap.parse_args(argv)
    files = generate(args.schemas)
    out: Path = args.out
    existing = {p.name for p in out.glob("*.py")} if out.exists() else set()
    stale = sorted(n for n, t in files.items()
                   if not (out / n).exists() or (out / n).read_text(encoding="utf-8") != t)
    extra = sorted(n for n in existing - set(files)
                   if (out / n).read_text(encoding="utf-8").startswith(HEADER))
    if args.check:
        if stale or extra:
            print("generated code is stale (run scripts/regenerate): "
                  + ", ".join(stale + [f"{n} (obsolete)" for n in extra]), file=sys.stderr)
            return 1
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for n in stale:
        (out / n).write_text(files[n], encoding="utf-8")
    for n in extra:
        (out / n).unlink()
    print(f"kcodec generator: {len(files)} files in {out} ({len(stale)} written, "
          f"{len(extra)} removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
