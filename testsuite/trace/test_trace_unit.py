"""Trace records, redaction, rotation, the bounded queue and `kshim trace show`, without a broker."""

from __future__ import annotations

import gzip
import io
import json

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcodec import api
from shim.cli import main
from shim.trace import records as R
from shim.trace.show import read_trace, show, trace_files
from shim.trace.sink import JsonLinesSink, parquet_available
from shim.trace.tracer import Tracer


def req(key, v, corr, body, client="c1") -> bytes:
    hv = api.request_header_version(key, v)
    return (api.RequestHeader(request_api_key=key, request_api_version=v, correlation_id=corr,
                              client_id=client).encode(hv) + body.encode(v))


def resp(key, v, corr, body) -> bytes:
    return api.ResponseHeader(correlation_id=corr).encode(api.response_header_version(key, v)) + body.encode(v)


def batch(n=3, codec=0, transactional=False, pid=-1, base_offset=0) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                  producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                                  base_sequence=0 if pid >= 0 else -1, batch_size=1 << 20)
    for i in range(n):
        b.append(i, timestamp=1_700_000_000_000 + i, key=None, value=b"value %d " % i * 20, headers=[])
    buf = bytearray(b.build())
    buf[0:8] = base_offset.to_bytes(8, "big")
    return bytes(buf)


def traced(tmp_path, feed, **kw) -> list[dict]:
    t = Tracer(tmp_path, **kw)
    feed(t)
    t.close()
    return list(read_trace(tmp_path))


def test_record_format_and_client_software(tmp_path):
    def feed(t):
        c = t.new_conn()
        t.conn_open(c, "10.0.0.1:5000", "node 1:9094")
        t.upstream_open(c, "127.0.0.1:19092")
        t.frame(c, R.C2K, 18, 3, 1, memoryview(req(18, 3, 1, api.REQUESTS[18](
            client_software_name="librdkafka", client_software_version="2.6.0"))), "rdkafka")
        t.frame(c, R.C2K, 3, 12, 2, memoryview(req(3, 12, 2, api.REQUESTS[3](topics=None))), "rdkafka")
        t.frame(c, R.C2K, 2, 7, 3, memoryview(b"\0" * 40), "rdkafka")   # ListOffsets: header fields only
        t.conn_close(c)
    recs = traced(tmp_path, feed)
    types = [r["type"] for r in recs]
    assert types == ["trace_start", "conn_open", "upstream_open", "frame", "frame", "frame", "conn_close", "trace_stop"]
    av, md, lo = recs[3], recs[4], recs[5]
    for r in (av, md, lo):
        assert r["conn"] == 1 and r["dir"] == "client->kshim" and r["peer"] == "10.0.0.1:5000"
        assert r["listener"] == "node 1:9094" and r["upstream"] == "127.0.0.1:19092" and r["client_id"] == "rdkafka"
        assert isinstance(r["ts_ns"], int) and r["wall_ms"] > 1_600_000_000_000
    assert av["body"] == {"clientSoftwareName": "librdkafka", "clientSoftwareVersion": "2.6.0"}
    assert (md["client_sw"], md["client_sw_version"]) == ("librdkafka", "2.6.0")
    assert (md["api"], md["api_key"], md["api_version"], md["corr"]) == ("Metadata", 3, 12, 2)
    assert md["body"]["topics"] is None
    assert lo["api"] == "ListOffsets" and lo["size"] == 40 and "body" not in lo and "decode_error" not in lo
    assert av["ts_ns"] <= md["ts_ns"] <= lo["ts_ns"]


def test_group_fields_are_promoted_and_responses_get_their_requests_group(tmp_path):
    def feed(t):
        c = t.new_conn()
        f = req(12, 4, 7, api.REQUESTS[12](group_id="g1", generation_id=3, member_id="m-1", group_instance_id="i-1"))
        t.frame(c, R.C2K, 12, 4, 7, memoryview(f), "c")
        t.frame(c, R.K2C, 12, 4, 7, memoryview(resp(12, 4, 7, api.RESPONSES[12](error_code=27))))
    hb, answer = [r for r in traced(tmp_path, feed) if r["type"] == "frame"]
    assert (hb["group"], hb["member"], hb["instance"], hb["generation"]) == ("g1", "m-1", "i-1", 3)
    assert answer["dir"] == "kshim->client" and answer["group"] == "g1" and answer["error_codes"] == [27]


def test_produce_and_fetch_batch_headers(tmp_path):
    records = batch(3, codec=1, transactional=True, pid=42, base_offset=0) + batch(2, base_offset=3)
    P = api.REQUESTS[0]
    from kcodec.generated.produce import PartitionProduceData, TopicProduceData
    produce = P(acks=-1, timeout_ms=1000, topic_data=[TopicProduceData(
        name="t", partition_data=[PartitionProduceData(index=0, records=records)])])
    from kcodec.generated.fetch import FetchableTopicResponse, PartitionData
    fetch = api.RESPONSES[1](responses=[FetchableTopicResponse(topic="t", partitions=[
        PartitionData(partition_index=1, error_code=0, high_watermark=5, records=records + records[:70])])])

    def feed(t):
        c = t.new_conn()
        f = memoryview(req(0, 9, 1, produce))
        t.frame(c, R.C2K, 0, 9, 1, f)
        t.frame(c, R.K2U, 0, 9, 1, f)
        t.frame(c, R.U2K, 1, 12, 2, memoryview(resp(1, 12, 2, fetch)))
    p1, p2, fr = [r for r in traced(tmp_path, feed) if r["type"] == "frame"]
    assert p1["batches"] == p2["batches"] and "body" not in p1
    b0, b1 = p1["batches"]
    assert (b0["topic"], b0["partition"], b0["count"], b0["compression"]) == ("t", 0, 3, "gzip")
    assert b0["transactional"] and b0["producer_id"] == 42 and not b0["control"]
    assert (b1["base_offset"], b1["count"], b1["compression"], b1["transactional"]) == (3, 2, "none", False)
    assert [b.get("count") for b in fr["batches"]] == [3, 2, None] and fr["batches"][2]["truncated"]


def test_batch_headers_name_topics_by_id_where_the_request_does():
    """Produce v13 names topics by id only: the batch headers carry the id's text."""
    import uuid

    from kcodec.generated.produce import PartitionProduceData, TopicProduceData
    ids = [uuid.UUID(int=7), uuid.UUID(int=9)]
    produce = api.REQUESTS[0](acks=-1, timeout_ms=1000, topic_data=[TopicProduceData(
        topic_id=i, partition_data=[PartitionProduceData(index=0, records=batch(1))]) for i in ids])
    for _ in range(2):       # the second time from the ids' texts already made
        got = R.describe(0, 13, req(0, 13, 1, produce), True, False)
        assert [b["topic"] for b in got["batches"]] == [str(i) for i in ids]


def test_bodies_flag_adds_produce_bodies(tmp_path):
    from kcodec.generated.produce import PartitionProduceData, TopicProduceData
    produce = api.REQUESTS[0](acks=1, timeout_ms=1000, topic_data=[TopicProduceData(
        name="t", partition_data=[PartitionProduceData(index=0, records=batch(1))])])
    recs = traced(tmp_path, lambda t: t.frame(t.new_conn(), R.C2K, 0, 9, 1, memoryview(req(0, 9, 1, produce))),
                  bodies=True)
    body = [r for r in recs if r["type"] == "frame"][0]["body"]
    assert body["topicData"][0]["partitionData"][0]["records"]  # base64 of the batch


def test_sasl_authenticate_is_redacted_both_ways(tmp_path):
    secret = b"\0alice\0hunter2-password"
    server = b"r=nonce,s=c2FsdA==,i=4096"

    def feed(t):
        c = t.new_conn()
        f = memoryview(req(36, 2, 5, api.REQUESTS[36](auth_bytes=secret)))
        t.frame(c, R.C2K, 36, 2, 5, f)
        t.frame(c, R.K2U, 36, 2, 5, f)
        r = memoryview(resp(36, 2, 5, api.RESPONSES[36](error_code=0, auth_bytes=server, session_lifetime_ms=1)))
        t.frame(c, R.U2K, 36, 2, 5, r)
        t.frame(c, R.K2C, 36, 2, 5, r)
        t.frame(c, R.C2K, 17, 1, 4, memoryview(req(17, 1, 4, api.REQUESTS[17](mechanism="PLAIN"))))
    recs = traced(tmp_path, feed)
    raw = b"".join(gzip.decompress(p.read_bytes()) for p in trace_files(tmp_path))
    for needle in (b"hunter2", b"alice", b"nonce", b"YWxpY2", b"hunter", b"cj1ub25jZ"):
        assert needle not in raw
    sasl = [r for r in recs if r.get("api") == "SaslAuthenticate"]
    assert len(sasl) == 4
    assert {r["body"]["authBytes"] for r in sasl} == {f"<redacted {len(secret)} bytes>",
                                                      f"<redacted {len(server)} bytes>"}
    hs = [r for r in recs if r.get("api") == "SaslHandshake"][0]
    assert hs["body"] == {"mechanism": "PLAIN"}


def test_redact_any_secret_named_field():
    doc = {"user": "bob", "password": "pw", "nested": [{"saltedPassword": "c2FsdA==", "token": None}],
           "mechanism": "SCRAM", "clientSecret": "x", "hmac": "aG1hYw==", "tokenId": "id-1"}
    out = R.redact(doc)
    assert out["user"] == "bob" and out["mechanism"] == "SCRAM" and out["tokenId"] == "id-1"
    assert out["password"].startswith("<redacted") and out["clientSecret"].startswith("<redacted")
    assert out["nested"][0]["saltedPassword"] == "<redacted 4 bytes>" and out["nested"][0]["token"] is None
    assert out["hmac"] == "<redacted 4 bytes>"
    assert R.event_record({"event": "x", "group": "g", "auth_bytes": "c2VjcmV0"})["body"]["auth_bytes"].startswith("<red")


def test_events_in_the_stream_and_undecodable_frames(tmp_path):
    def feed(t):
        t.event({"event": "generation", "group": "g", "generation": 4, "members": 2, "leader": "m-1", "ts": 1})
        t.frame(t.new_conn(), R.C2K, 11, 9, 1, memoryview(b"\x00\x0b\x00\x09garbage"))
    ev, bad = [r for r in traced(tmp_path, feed) if r["type"] in ("event", "frame")]
    assert (ev["event"], ev["group"], ev["generation"], ev["body"]["leader"]) == ("generation", "g", 4, "m-1")
    assert bad["api"] == "JoinGroup" and bad["decode_error"]


def test_rotation_makes_complete_files_in_order(tmp_path):
    sink = JsonLinesSink(tmp_path, rotate_bytes=64 * 1024, level=1)
    import os
    for i in range(120):
        sink.write([{"type": "frame", "i": i, "pad": os.urandom(3000).hex()}])
    sink.close()
    files = trace_files(tmp_path)
    assert len(files) >= 3 and all(p.name.endswith(".jsonl.gz") for p in files)
    assert not list(tmp_path.glob("*.part"))
    assert all(p.stat().st_size < 2 * 64 * 1024 for p in files)  # + what zlib still held
    assert [r["i"] for r in read_trace(tmp_path)] == list(range(120))


def test_a_file_being_written_is_readable(tmp_path):
    sink = JsonLinesSink(tmp_path, rotate_bytes=1 << 30)
    sink.write([{"type": "frame", "i": 1}])
    sink.flush()
    assert [p.name.endswith(".part") for p in trace_files(tmp_path)] == [True]
    assert [r["i"] for r in read_trace(tmp_path)] == [1]
    sink.close()


def test_overflow_drops_and_counts_never_blocks(tmp_path):
    t = Tracer(tmp_path, max_items=10, max_bytes=1000)
    t._stop.set()              # keep the writer from draining while we fill the queue
    t._thread.join()
    big = memoryview(req(11, 9, 1, api.REQUESTS[11](group_id="g" * 900, protocol_type="consumer")))
    for i in range(50):
        t.frame(1, R.C2K, 2, 7, i, memoryview(b"x" * 20))
    t.frame(1, R.C2K, 11, 9, 1, big)
    assert len(t.q) == 10 and t.dropped == 41
    t._stop.clear()
    t._thread = __import__("threading").Thread(target=t._run, daemon=True)
    t._thread.start()
    t.close()
    recs = list(read_trace(tmp_path))
    dropped = [r for r in recs if r["type"] == "dropped"]
    assert dropped and dropped[-1]["info"]["total"] == 41
    assert recs[-1]["type"] == "trace_stop" and recs[-1]["info"]["dropped"] == 41


def test_show_filters_and_cli(tmp_path, capsys):
    def feed(t):
        c = t.new_conn()
        for corr, (group, inst) in enumerate([("g1", "i-a"), ("g2", "i-b"), ("g1", "i-b")]):
            f = req(11, 9, corr, api.REQUESTS[11](group_id=group, group_instance_id=inst, member_id="",
                                                  protocol_type="consumer"))
            t.frame(c, R.C2K, 11, 9, corr, memoryview(f))
        t.frame(c, R.C2K, 3, 12, 9, memoryview(req(3, 12, 9, api.REQUESTS[3](topics=None))))
        t.event({"event": "generation", "group": "g1", "generation": 1, "members": 2})
    traced(tmp_path, feed)
    out = io.StringIO()
    assert show(tmp_path, group="g1", out=out) == 3
    lines = out.getvalue().splitlines()
    assert "JoinGroup v9 #0" in lines[0] and "group=g1" in lines[0] and "instance=i-a" in lines[0]
    assert "event  generation" in lines[2] and "gen=1" in lines[2]
    assert show(tmp_path, member="i-b", out=io.StringIO()) == 2
    assert show(tmp_path, api="metadata", out=io.StringIO()) == 1
    assert show(tmp_path, api="JoinGroup,events", limit=2, out=io.StringIO()) == 2
    assert main(["trace", "show", str(tmp_path), "--group", "g2", "--json"]) == 0
    (rec,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rec["instance"] == "i-b" and rec["api"] == "JoinGroup"
    assert main(["trace", "show", str(tmp_path / "nope")]) == 2


@pytest.mark.skipif(not parquet_available(), reason="pyarrow not installed (pip install 'kshim[trace]')")
def test_parquet_format_reads_back(tmp_path):
    def feed(t):
        c = t.new_conn()
        t.frame(c, R.C2K, 12, 4, 7, memoryview(req(12, 4, 7, api.REQUESTS[12](group_id="g1", generation_id=3,
                                                                              member_id="m-1"))), "c")
        t.event({"event": "generation", "group": "g1", "generation": 3, "members": 1})
    recs = traced(tmp_path, feed, fmt="parquet")
    assert trace_files(tmp_path)[0].name.endswith(".parquet")
    hb = [r for r in recs if r["type"] == "frame"][0]
    assert hb["group"] == "g1" and hb["body"]["memberId"] == "m-1"
    assert [r for r in recs if r["type"] == "event"][0]["generation"] == 3


def test_config_and_run_flags():
    from shim.cli import build_parser
    from shim.config import ConfigError, flags_from_args, load
    args = build_parser().parse_args(["run", "--trace", "/tmp/x", "--trace-bodies", "--trace-rotate-mb", "8"])
    cfg = load(None, flags_from_args(args), environ={})
    assert (cfg.trace_dir, cfg.trace_bodies, cfg.trace_rotate_mb, cfg.trace_format) == ("/tmp/x", True, 8.0, "jsonl")
    assert load(None, {}, environ={}).trace_dir == ""
    with pytest.raises(ConfigError):
        load(None, {"trace_format": "csv"}, environ={})
