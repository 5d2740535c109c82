"""Requests kshim decodes itself, read as the broker reads them: the same raw bytes go to the real
broker and through kshim, and the answers must agree.

- Bytes after a valid body are ignored (`RequestContext.parseRequest` parses the body and does not
  look at what follows), for every API kshim decodes: its group APIs and FindCoordinator, and the
  watched EndTxn/InitProducerId.
- FindCoordinator's error messages (`KafkaApis.handleFindCoordinatorRequest`): v1-3 carry
  `Errors.message()`, "NONE" on success; v4+ entries carry the field's default, an empty string."""

from __future__ import annotations

import copy
import time

import pytest

from kcodec import api

from shim.compat.wire import Wire

FIND = 10
TRAILING = b"\x00\x01\x02"


def _cases(group: str) -> list[tuple[int, int, object]]:
    R = api.REQUESTS
    return [
        (10, 0, R[10](key=group)),
        (10, 3, R[10](key=group, key_type=0)),
        (10, 4, R[10](key_type=0, coordinator_keys=[group])),
        (10, 6, R[10](key_type=0, coordinator_keys=[group, group + "-2"])),
        (11, 9, R[11](group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                      protocol_type="consumer", protocols=[])),
        (12, 0, R[12](group_id=group, generation_id=1, member_id="m")),
        (12, 4, R[12](group_id=group, generation_id=1, member_id="m")),
        (13, 5, R[13](group_id=group, members=[])),
        (14, 5, R[14](group_id=group, generation_id=1, member_id="m", assignments=[])),
        (8, 9, R[8](group_id=group, generation_id_or_member_epoch=1, member_id="m", topics=[])),
        (9, 1, R[9](group_id=group, topics=[])),
        (9, 8, R[9](groups=[_fetch_group(group)])),
        (15, 0, R[15](groups=[group])),
        (15, 5, R[15](groups=[group], include_authorized_operations=False)),
        (16, 4, R[16](states_filter=["Dead"])),
        (42, 2, R[42](groups_names=[group + "-none"])),
        (47, 0, R[47](group_id=group, topics=[])),
        (69, 0, R[69](group_ids=[group])),
        (26, 3, R[26](transactional_id=group, producer_id=1, producer_epoch=0, committed=True)),
    ]


def _fetch_group(group: str):
    from kcodec.generated.offset_fetch import OffsetFetchRequestGroup
    return OffsetFetchRequestGroup(group_id=group, topics=None)


def _normalized(api_key: int, body):
    """What the broker and kshim must agree on: addresses and generated member ids set aside."""
    body = copy.deepcopy(body)
    if api_key == FIND:
        for c in [body, *body.coordinators]:
            c.host, c.port = "-", 0
    if api_key == 11:
        body.member_id = "-"
    return repr(body)


def _ask(bootstrap: str, api_key: int, version: int, req, trailing: bytes):
    with Wire(bootstrap) as w:
        w.send(api_key, version, req.encode(version) + trailing)
        return _normalized(api_key, w.read_response(api_key, version)[1])


def _coordinators_ready(bootstrap: str, group: str) -> None:
    """The broker creates and loads __consumer_offsets and __transaction_state on first use."""
    for key_type in (0, 1):
        for _ in range(150):
            with Wire(bootstrap) as w:
                w.send(FIND, 3, api.REQUESTS[FIND](key=group, key_type=key_type))
                if w.read_response(FIND, 3)[1].error_code == 0:
                    break
            time.sleep(0.2)


def test_trailing_bytes_after_the_body_are_ignored(kafka, kshim, names):
    group = names.group()
    _coordinators_ready(kafka.bootstrap, group)
    for api_key, version, req in _cases(group):
        broker = _ask(kafka.bootstrap, api_key, version, req, TRAILING)
        assert broker == _ask(kafka.bootstrap, api_key, version, req, b""), (api_key, version)
        assert _ask(kshim.bootstrap, api_key, version, req, TRAILING) == broker, (api_key, version)


@pytest.mark.parametrize("key_type", [0, 1])
def test_find_coordinator_error_message_as_the_broker(kafka, kshim, names, key_type):
    group = names.group()
    _coordinators_ready(kafka.bootstrap, group)
    R = api.REQUESTS[FIND]
    for version in range(1, 7):
        req = R(key_type=key_type, coordinator_keys=[group, group + "-2"]) if version >= 4 else \
            R(key_type=key_type, key=group)
        seen = {}
        for where, boot in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap)):
            with Wire(boot) as w:
                w.send(FIND, version, req)
                body = w.read_response(FIND, version)[1]
            seen[where] = [(c.error_code, c.error_message) for c in (body.coordinators if version >= 4 else [body])]
        assert seen["kshim"] == seen["broker"], version
        assert seen["broker"][0] == (0, "NONE" if version < 4 else ""), version
