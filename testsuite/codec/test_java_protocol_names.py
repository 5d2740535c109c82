"""kcodec's generated protocol vocabulary against Kafka's own ApiKeys and Errors enums
(the 4.3.1 kafka-clients jar, through testsuite/java/ProtocolNamesCheck.java): every api key
name and id, every error name, code, retriability (instanceof RetriableException), default
message and exception class, in both directions."""

from __future__ import annotations

import pytest

from kcodec.protocol import ERROR_EXCEPTIONS, ERROR_INFO, ApiKey, Error
from testsuite.harness.jsonjvm import start_json_jvm

pytestmark = pytest.mark.java


@pytest.fixture(scope="module")
def kafka_names(tmp_path_factory):
    jvm = start_json_jvm("ProtocolNamesCheck", tmp_path_factory)
    try:
        answer = jvm.call(op="protocol_names")
    finally:
        jvm.close()
    assert "error" not in answer, answer
    return answer


def test_api_keys_match_kafka(kafka_names):
    kafka = {name: key for name, key in kafka_names["api_keys"]}
    ours = {k.name: int(k) for k in ApiKey}
    assert ours == kafka


def test_errors_match_kafka(kafka_names):
    kafka = {code: (name, retriable, message, exc)
             for name, code, retriable, message, exc in kafka_names["errors"]}
    ours = {int(e): (e.name, ERROR_INFO[e].retriable, ERROR_INFO[e].message,
                     ERROR_EXCEPTIONS.get(int(e))) for e in Error}
    assert sorted(ours) == sorted(kafka)
    diffs = [f"{code}: kcodec {ours[code]} != Kafka {kafka[code]}"
             for code in sorted(kafka) if ours[code] != kafka[code]]
    assert not diffs, "\n".join(diffs)
    assert {code: info.name for code, info in ERROR_INFO.items()} == \
        {code: row[0] for code, row in kafka.items()}
