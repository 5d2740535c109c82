"""Short property-based fuzz of the codec: arbitrary and mutated bytes into the frame
splitter, the header peeks, the record-batch decoder and every request/response decoder.
Only DecodeError (and its subclasses) may escape.  Deterministic (derandomized); the long
coverage-guided run is scripts/fuzz-codec."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testsuite.codec import fuzz_targets as ft

FAST = settings(max_examples=2000, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
SEEDS = ft.seed_batches()


@FAST
@given(st.binary(max_size=600))
def test_frame_splitter(data):
    ft.frame_splitter(data)


@FAST
@given(st.binary(max_size=300))
def test_peeks(data):
    ft.peeks(data)


@FAST
@given(st.binary(max_size=400))
def test_records_random(data):
    ft.records_blob(data)


@settings(FAST, max_examples=5000)
@given(st.sampled_from(range(len(SEEDS))), st.binary(min_size=1, max_size=24), st.booleans())
def test_records_mutated(i, data, fix):
    blob = ft.mutate(SEEDS[i], data)
    ft.records_blob(ft.fix_crc(blob) if fix else blob)


def _api_targets():
    try:
        return ft.api_targets()
    except ImportError:  # the generated codec is not there yet
        return []


TARGETS = _api_targets()
needs_api = pytest.mark.skipif(not TARGETS, reason="kcodec.api not available")


@needs_api
@settings(FAST, max_examples=6000)
@given(st.data())
def test_api_random_bytes(data):
    key, version, kind = data.draw(st.sampled_from(TARGETS))
    ft.decode_api(key, version, kind, data.draw(st.binary(max_size=200)))


@needs_api
def test_api_mutated_valid_messages():
    """Valid encodings of random schema samples, then truncated / bit-flipped / spliced."""
    from kcodec import api

    from testsuite.codec.schema_samples import load_schemas, random_json
    schemas = load_schemas()
    rnd = random.Random(1234)
    checked = 0
    for key, version, kind in TARGETS:
        cls = (api.REQUESTS if kind == "request" else api.RESPONSES)[key]
        schema = schemas.get(cls.__name__) or schemas.get(
            api.API_KEYS[key] + ("Request" if kind == "request" else "Response"))
        if schema is None:
            continue
        for _ in range(3):
            sample = cls.from_json(random_json(schema, version, rnd), version)
            good = sample.encode(version)
            for _ in range(25):
                ft.decode_api(key, version, kind, ft.mutate(good, rnd.randbytes(8)))
                checked += 1
            for cut in range(0, len(good), max(1, len(good) // 8)):
                ft.decode_api(key, version, kind, good[:cut])
                checked += 1
    assert checked > 1000
