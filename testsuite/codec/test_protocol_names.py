"""The generated protocol vocabulary (kcodec.protocol): known codes, consistency with the
codec's API tables, and the generator's reader of the pinned vocabulary on small made-up input.
The full comparison with Kafka's classes is test_java_protocol_names.py (marked java)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kcodec import api
from kcodec.protocol import (ERROR_EXCEPTIONS, ERROR_INFO, ApiKey, Error, api_name,
                             error_message, error_name, is_retriable)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "codecs" / "generator"))
from gen_protocol import VocabularyError, api_constant, load_vocabulary  # noqa: E402

# (name, code, retriable) as the Kafka protocol defines them; the errors a group coordinator
# and its clients meet, plus the ends of the range.
KNOWN_ERRORS = [
    ("UNKNOWN_SERVER_ERROR", -1, False), ("NONE", 0, False),
    ("OFFSET_OUT_OF_RANGE", 1, False), ("CORRUPT_MESSAGE", 2, True),
    ("UNKNOWN_TOPIC_OR_PARTITION", 3, True), ("NOT_LEADER_OR_FOLLOWER", 6, True),
    ("REQUEST_TIMED_OUT", 7, True), ("OFFSET_METADATA_TOO_LARGE", 12, False),
    ("NETWORK_EXCEPTION", 13, True),
    ("COORDINATOR_LOAD_IN_PROGRESS", 14, True), ("COORDINATOR_NOT_AVAILABLE", 15, True),
    ("NOT_COORDINATOR", 16, True), ("INVALID_TOPIC_EXCEPTION", 17, False),
    ("ILLEGAL_GENERATION", 22, False), ("INCONSISTENT_GROUP_PROTOCOL", 23, False),
    ("INVALID_GROUP_ID", 24, False), ("UNKNOWN_MEMBER_ID", 25, False),
    ("INVALID_SESSION_TIMEOUT", 26, False), ("REBALANCE_IN_PROGRESS", 27, False),
    ("INVALID_COMMIT_OFFSET_SIZE", 28, False), ("TOPIC_AUTHORIZATION_FAILED", 29, False),
    ("GROUP_AUTHORIZATION_FAILED", 30, False), ("CLUSTER_AUTHORIZATION_FAILED", 31, False),
    ("UNSUPPORTED_VERSION", 35, False), ("INVALID_REQUEST", 42, False),
    ("INVALID_PRODUCER_EPOCH", 47, False), ("INVALID_PRODUCER_ID_MAPPING", 49, False),
    ("CONCURRENT_TRANSACTIONS", 51, True), ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 53, False),
    ("NON_EMPTY_GROUP", 68, False), ("GROUP_ID_NOT_FOUND", 69, False),
    ("MEMBER_ID_REQUIRED", 79, False), ("GROUP_MAX_SIZE_REACHED", 81, False),
    ("FENCED_INSTANCE_ID", 82, False), ("GROUP_SUBSCRIBED_TO_TOPIC", 86, False),
    ("UNSTABLE_OFFSET_COMMIT", 88, True), ("PRODUCER_FENCED", 90, False),
    ("UNKNOWN_TOPIC_ID", 100, True), ("FENCED_MEMBER_EPOCH", 110, False),
    ("UNRELEASED_INSTANCE_ID", 111, False), ("UNSUPPORTED_ASSIGNOR", 112, False),
    ("STALE_MEMBER_EPOCH", 113, False), ("TRANSACTION_ABORTABLE", 120, False),
]

KNOWN_API_KEYS = [
    ("PRODUCE", 0), ("FETCH", 1), ("METADATA", 3), ("LEADER_AND_ISR", 4),
    ("OFFSET_COMMIT", 8), ("OFFSET_FETCH", 9), ("FIND_COORDINATOR", 10), ("JOIN_GROUP", 11),
    ("HEARTBEAT", 12), ("LEAVE_GROUP", 13), ("SYNC_GROUP", 14), ("DESCRIBE_GROUPS", 15),
    ("LIST_GROUPS", 16), ("API_VERSIONS", 18), ("INIT_PRODUCER_ID", 22),
    ("ADD_OFFSETS_TO_TXN", 25), ("END_TXN", 26), ("WRITE_TXN_MARKERS", 27),
    ("TXN_OFFSET_COMMIT", 28), ("DELETE_GROUPS", 42), ("OFFSET_DELETE", 47),
    ("DESCRIBE_CLIENT_QUOTAS", 48), ("DESCRIBE_USER_SCRAM_CREDENTIALS", 50),
    ("CONSUMER_GROUP_HEARTBEAT", 68), ("CONSUMER_GROUP_DESCRIBE", 69),
    ("STREAMS_GROUP_HEARTBEAT", 88),
]


@pytest.mark.parametrize("name,code,retriable", KNOWN_ERRORS)
def test_known_error_codes(name, code, retriable):
    assert Error[name] == code
    assert Error(code).name == name
    assert ERROR_INFO[code].name == name
    assert ERROR_INFO[code].retriable is retriable
    assert is_retriable(code) is retriable
    assert error_name(code) == name


@pytest.mark.parametrize("name,key", KNOWN_API_KEYS)
def test_known_api_keys(name, key):
    assert ApiKey[name] == key and api_name(key) == name


def test_api_keys_are_the_codec_tables():
    every = {**api.API_KEYS, **api.REMOVED_API_KEYS}
    assert {int(k) for k in ApiKey} == set(every)
    for key, schema_name in every.items():
        assert ApiKey(key).name == api_constant(schema_name)
    assert api.API_VERSIONS_KEY is ApiKey.API_VERSIONS


def test_error_tables_are_consistent():
    assert set(ERROR_INFO) == {int(e) for e in Error}
    assert set(ERROR_EXCEPTIONS) == {int(e) for e in Error} - {0}
    for e in Error:
        assert ERROR_INFO[e].name == e.name
        assert (ERROR_INFO[e].message is None) == (e is Error.NONE)
        if e is not Error.NONE:
            assert ERROR_EXCEPTIONS[e].startswith("org.apache.kafka.common.")
    assert error_message(25) == "The coordinator is not aware of this member."
    assert ERROR_EXCEPTIONS[25] == "org.apache.kafka.common.errors.UnknownMemberIdException"


def test_unknown_codes_and_keys():
    assert error_name(9999) == "UNKNOWN_ERROR(9999)" and not is_retriable(9999)
    assert error_message(9999) is None
    assert api_name(9999) == "UNKNOWN_API(9999)"
    with pytest.raises(ValueError):
        Error(9999)


def test_enums_are_wire_integers():
    from kcodec.generated.heartbeat import HeartbeatResponse
    resp = HeartbeatResponse(error_code=Error.REBALANCE_IN_PROGRESS)
    assert HeartbeatResponse.decode(resp.encode(4), 4).error_code == 27


@pytest.mark.parametrize("name,want", [
    ("JoinGroup", "JOIN_GROUP"), ("OffsetForLeaderEpoch", "OFFSET_FOR_LEADER_EPOCH"),
    ("DescribeACLs", "DESCRIBE_ACLS"), ("KRaftVersion", "KRAFT_VERSION"), ("Vote", "VOTE"),
])
def test_api_constant_spelling(name, want):
    assert api_constant(name) == want


# --- the generator's Errors.java reader ------------------------------------------------------

def _vocabulary(tmp_path, api_keys, errors):
    (tmp_path / "protocol-vocabulary.json").write_text(json.dumps({"api_keys": api_keys, "errors": errors}))
    return tmp_path


ERRORS = [[5, "LAMBDA", True, "Lambda.", "org.apache.kafka.common.errors.BetaException"],
          [-1, "NEGATIVE", False, 'A "quote" and \u00e9.', "org.apache.kafka.common.errors.AlphaException"],
          [0, "NONE", False, None, None]]


def test_vocabulary_reader_sorts_errors_and_checks_schema_names(tmp_path):
    d = _vocabulary(tmp_path, [[11, "JOIN_GROUP"], [4, "LEADER_AND_ISR"]], ERRORS)
    keys, rows = load_vocabulary(d, {11: "JoinGroup"})
    assert keys == {11: "JOIN_GROUP", 4: "LEADER_AND_ISR"}    # a key without a schema is kept
    assert [(n, c, r) for n, c, r, _, _ in rows] == [("NEGATIVE", -1, False), ("NONE", 0, False), ("LAMBDA", 5, True)]
    assert rows[0][3] == 'A "quote" and \u00e9.'


def test_vocabulary_reader_refuses_inconsistent_input(tmp_path):
    with pytest.raises(VocabularyError, match="JoinGroup"):
        load_vocabulary(_vocabulary(tmp_path, [[11, "JOINGROUP"]], ERRORS), {11: "JoinGroup"})
    with pytest.raises(VocabularyError, match="api key 12"):
        load_vocabulary(_vocabulary(tmp_path, [[11, "JOIN_GROUP"]], ERRORS), {12: "Heartbeat"})
    with pytest.raises(VocabularyError, match="duplicate error"):
        load_vocabulary(_vocabulary(tmp_path, [], ERRORS + [[5, "OTHER", False, "x", None]]), {})
    with pytest.raises(VocabularyError, match="missing"):
        load_vocabulary(tmp_path / "nowhere", {})
