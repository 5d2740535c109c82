"""kcodec against Kafka's own generated Java message classes (4.3.1 jars).

One JVM per session runs testsuite/java/CodecCrossCheck.java.  For every schema (api
requests/responses, the request/response headers and the non-api "data" messages) and
every valid version, random samples built from the schema JSON (schema_samples.py) must
 1. encode to the same bytes in kcodec and in Kafka (fed the same JsonConverter JSON), and
 2. decode from Kafka's bytes, in kcodec, to the JSON that Kafka's JsonConverter writes.
Record batches written by Kafka (each codec, transactional, control markers) must decode
with kcodec.records.
"""

from __future__ import annotations

import base64
import json
import os
import random

import pytest

from kcodec import records as krec
from testsuite.codec.schema_samples import (blank_records, load_schemas, random_json,
                                            records_paths, valid_versions)
from testsuite.harness.jsonjvm import start_json_jvm

pytestmark = pytest.mark.java

SAMPLES_PER_VERSION = int(os.environ.get("KSHIM_CROSSCHECK_SAMPLES", "20"))


@pytest.fixture(scope="session")
def jvm(tmp_path_factory):
    codec = start_json_jvm("CodecCrossCheck", tmp_path_factory)
    yield codec
    codec.close()


# --- message classes ---------------------------------------------------------------------

def _python_classes() -> dict[str, type]:
    """Schema name -> kcodec class, for every message kcodec generates."""
    try:
        from kcodec import api
    except ImportError:
        return {}
    out: dict[str, type] = {}
    for key, name in api.API_KEYS.items():
        for suffix, table in (("Request", api.REQUESTS), ("Response", api.RESPONSES)):
            if key in table:
                out[name + suffix] = table[key]
    from kcodec.generated import _index
    for name in getattr(_index, "OTHER", {}):
        out[name] = api.data_class(name)
    return out


SCHEMAS = load_schemas()
CLASSES = _python_classes()


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _short(doc) -> str:
    text = json.dumps(doc, ensure_ascii=False)
    return text if len(text) < 600 else text[:600] + "..."


def check_message(jvm, name: str, samples: int = SAMPLES_PER_VERSION) -> list[str]:
    """Cross-check one schema over all its versions; returns the problems found."""
    schema = SCHEMAS[name]
    cls = CLASSES[name]
    rpaths = records_paths(schema)
    rnd = random.Random(f"{name}-crosscheck")
    problems: list[str] = []
    for version in valid_versions(schema):
        for i in range(samples):
            doc = random_json(schema, version, rnd)
            where = f"{name} v{version} sample {i}"
            jenc = jvm.call(op="encode", name=name, version=version, json=doc)
            try:
                ours = cls.from_json(doc, version).encode(version)
            except Exception as e:  # noqa: BLE001 - reported below
                ours = e
            if "error" in jenc:
                if not isinstance(ours, Exception):
                    problems.append(f"{where}: Kafka rejects the sample ({jenc['error']}) but "
                                    f"kcodec encodes it\n  json: {_short(doc)}")
                continue
            java_bytes = base64.b64decode(jenc["bytes"])
            if isinstance(ours, Exception):
                problems.append(f"{where}: kcodec cannot encode: {ours!r}\n  json: {_short(doc)}")
            elif ours != java_bytes:
                problems.append(f"{where}: bytes differ\n  json: {_short(doc)}\n"
                                f"  kafka:  {java_bytes.hex()}\n  kcodec: {ours.hex()}")
            jdec = jvm.call(op="decode", name=name, version=version, bytes=jenc["bytes"])
            if "error" in jdec:
                problems.append(f"{where}: Kafka cannot decode its own bytes: {jdec['error']}")
                continue
            try:
                mine = cls.decode(java_bytes, version).to_json(version)
            except Exception as e:  # noqa: BLE001
                problems.append(f"{where}: kcodec cannot decode Kafka's bytes: {e!r}\n"
                                f"  kafka: {java_bytes.hex()}")
                continue
            want = jdec["json"]
            if blank_records(mine, rpaths) != want:
                problems.append(f"{where}: decoded JSON differs\n  kafka:  {_short(want)}\n"
                                f"  kcodec: {_short(mine)}")
    return problems


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_message_matches_kafka(jvm, name):
    if name not in CLASSES:
        pytest.skip(f"kcodec has no class for {name}")
    problems = check_message(jvm, name)
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:8])


# --- mutated bytes: kcodec must reject what Kafka rejects, and agree on what both accept ---

# Known, deliberate ways kcodec is stricter than Kafka's generated Java readers:
#  - a 5-byte unsigned varint whose value needs more than 32 bits (Java drops the high bits);
#  - a known tagged field whose declared size differs from what its value uses, or runs past
#    the end of the buffer (Java ignores the size of tags it knows).
STRICTER = ("does not fit in 32 bits", "tagged field size mismatch", "_tagged_fields")
MUTATIONS_PER_VERSION = int(os.environ.get("KSHIM_CROSSCHECK_MUTATIONS", "24"))


def _has_surrogates(doc) -> bool:
    """kcodec keeps invalid UTF-8 as lone surrogates (surrogateescape); Kafka substitutes
    U+FFFD. Such samples are compared for acceptance only."""
    return any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(doc, ensure_ascii=False))


def check_mutations(jvm, name: str) -> list[str]:
    from kcodec.errors import DecodeError

    from testsuite.codec.fuzz_targets import mutate
    schema = SCHEMAS[name]
    cls = CLASSES[name]
    rpaths = records_paths(schema)
    rnd = random.Random(f"{name}-mutations")
    problems = []
    for version in valid_versions(schema):
        good = cls.from_json(random_json(schema, version, rnd), version).encode(version)
        for _ in range(MUTATIONS_PER_VERSION):
            data = mutate(good, rnd.randbytes(8))
            where = f"{name} v{version} bytes {data.hex()}"
            try:
                mine = cls.decode(data, version)
            except DecodeError as e:
                mine = e
            jdec = jvm.call(op="decode", name=name, version=version, bytes=_b64(data))
            kafka_ok = "error" not in jdec and jdec["remaining"] == 0
            if isinstance(mine, DecodeError):
                if kafka_ok and not any(k in str(mine) for k in STRICTER):
                    problems.append(f"{where}: only kcodec rejects: {mine}")
                continue
            if not kafka_ok:
                why = jdec.get("error") or f"{jdec['remaining']} trailing bytes"
                problems.append(f"{where}: kcodec accepts what Kafka rejects ({why})")
                continue
            got = blank_records(mine.to_json(version), rpaths)
            if got != jdec["json"] and not _has_surrogates(got):
                problems.append(f"{where}: decoded JSON differs\n  kafka:  {_short(jdec['json'])}"
                                f"\n  kcodec: {_short(got)}")
    return problems


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_mutated_bytes_decode_like_kafka(jvm, name):
    if name not in CLASSES:
        pytest.skip(f"kcodec has no class for {name}")
    problems = check_mutations(jvm, name)
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:8])


# --- record batches ------------------------------------------------------------------------

def _sample_records(n: int) -> list[dict]:
    out = []
    for i in range(n):
        out.append({
            "timestamp": 1_700_000_000_000 + 13 * i,
            "key": None if i % 4 == 1 else _b64(b"key-%d" % (i % 3)),
            "value": None if i % 9 == 4 else _b64(b"some value %d " % i * (1 + i % 5)),
            "headers": [] if i % 2 else [{"key": "trace", "value": _b64(b"abc")},
                                         {"key": "n", "value": None}],
        })
    return out


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("mode", ["plain", "idempotent", "transactional", "log_append"])
def test_records_written_by_kafka(jvm, compression, mode):
    recs = _sample_records(40)
    req = dict(op="records", compression=compression, base_offset=500, records=recs,
               partition_leader_epoch=3)
    if mode != "plain":
        req.update(producer_id=77, producer_epoch=2, base_sequence=10,
                   transactional=mode == "transactional")
    if mode == "log_append":
        req["timestamp_type"] = "LOG_APPEND_TIME"
    ans = jvm.call(**req)
    assert "error" not in ans, ans
    blob = base64.b64decode(ans["bytes"])
    (batch,) = krec.decode_batches(blob, strict=True)
    assert batch.compression.name.lower() == compression
    assert (batch.base_offset, batch.partition_leader_epoch) == (500, 3)
    assert batch.is_transactional == (mode == "transactional")
    if mode != "plain":
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 2, 10)
    else:
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.records_count == len(recs) and batch.last_offset == 500 + len(recs) - 1
    for i, (got, want) in enumerate(zip(batch.records, recs)):
        assert got.offset == 500 + i
        if mode == "log_append":
            assert got.timestamp == batch.max_timestamp
        else:
            assert got.timestamp == want["timestamp"]
        assert got.key == (None if want["key"] is None else base64.b64decode(want["key"]))
        assert got.value == (None if want["value"] is None else base64.b64decode(want["value"]))
        assert [(h.key, h.value) for h in got.headers] == [
            (h["key"], None if h["value"] is None else base64.b64decode(h["value"]))
            for h in want["headers"]]


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_marker_written_by_kafka(jvm, commit):
    ans = jvm.call(op="end_txn_marker", commit=commit, base_offset=42, timestamp=123456,
                   partition_leader_epoch=1, producer_id=9001, producer_epoch=4,
                   coordinator_epoch=17)
    (batch,) = krec.decode_batches(base64.b64decode(ans["bytes"]), strict=True)
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_offset) == (9001, 4, 42)
    (rec,) = batch.records
    ctl = rec.control
    assert ctl.type == (krec.ControlType.COMMIT if commit else krec.ControlType.ABORT)
    assert ctl.coordinator_epoch == 17 and rec.timestamp == 123456


def test_several_batches_and_legacy_format(jvm):
    blobs = [base64.b64decode(jvm.call(op="records", compression=c, base_offset=10 * i,
                                       records=_sample_records(3))["bytes"])
             for i, c in enumerate(["zstd", "none", "lz4"])]
    batches = krec.decode_batches(b"".join(blobs))
    assert [b.base_offset for b in batches] == [0, 10, 20]
    for magic in (0, 1):
        legacy = [dict(r, headers=[]) for r in _sample_records(2)]  # v0/v1 have no headers
        ans = jvm.call(op="records", magic=magic, compression="gzip", records=legacy)
        with pytest.raises(krec.UnsupportedRecordFormat):
            krec.decode_batches(base64.b64decode(ans["bytes"]))
