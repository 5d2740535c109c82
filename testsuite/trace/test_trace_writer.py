"""The tracer's writer process (shim/trace/writer.py): the proxy's process only queues and pipes;
the records are the same as when the writer runs on a thread of the proxy."""

import os

from kcodec import api
from kcodec.generated.produce import PartitionProduceData, TopicProduceData
from shim.trace import records as R
from shim.trace.show import read_trace
from shim.trace.tracer import Tracer
from testsuite.trace.test_trace_unit import batch, req


def feed(t: Tracer) -> None:
    c = t.new_conn()
    t.conn_open(c, "10.0.0.1:5000", "node 1:9094")
    t.upstream_open(c, "127.0.0.1:19092")
    join = memoryview(req(11, 9, 1, api.REQUESTS[11](group_id="g", group_instance_id="i-1", member_id="",
                                                     protocol_type="consumer")))
    t.frame(c, R.C2K, 11, 9, 1, join, "app")
    produce = memoryview(req(0, 9, 2, api.REQUESTS[0](acks=-1, timeout_ms=1000, topic_data=[
        TopicProduceData(name="t", partition_data=[PartitionProduceData(index=0, records=batch(3))])])))
    t.frame(c, R.C2K, 0, 9, 2, produce, "app")
    t.frame(c, R.K2U, 0, 9, 2, produce)          # the same bytes forwarded: one copy crosses the pipe
    t.event({"event": "generation", "group": "g", "generation": 1, "members": 1})
    t.conn_close(c)


def records(tmp_path, process: bool) -> list[dict]:
    t = Tracer(tmp_path, process=process)
    assert (t.proc is not None) == process and (t.writer is None) == process
    feed(t)
    t.close()
    if process:
        assert t.proc.returncode == 0
    return list(read_trace(tmp_path))


def test_the_writer_process_writes_what_the_thread_writes(tmp_path):
    by_process = records(tmp_path / "p", True)
    by_thread = records(tmp_path / "t", False)
    drop = ("ts_ns", "wall_ms", "info")

    def comparable(recs):
        return [{k: v for k, v in r.items() if k not in drop} for r in recs]
    assert comparable(by_process) == comparable(by_thread)
    assert [r["type"] for r in by_process] == ["trace_start", "conn_open", "upstream_open", "frame", "frame",
                                              "frame", "event", "conn_close", "trace_stop"]
    produce = by_process[4]
    assert produce["api"] == "Produce" and produce["batches"][0]["count"] == 3
    assert by_process[0]["info"]["pid"] == os.getpid()
    assert by_process[-1]["info"] == {"dropped": 0, "records": 8}


def test_a_writer_process_that_is_gone_costs_records_not_the_proxy(tmp_path):
    t = Tracer(tmp_path, process=True)
    t.proc.kill()
    t.proc.wait()
    feed(t)
    t.close()                      # no exception: the records are counted as dropped
    assert t.dropped == 7           # every item fed


def test_a_frame_streamed_in_parts_is_traced_as_the_whole_frame(tmp_path):
    produce = req(0, 9, 2, api.REQUESTS[0](acks=-1, timeout_ms=1000, topic_data=[
        TopicProduceData(name="t", partition_data=[PartitionProduceData(index=0, records=batch(5))])]))
    whole = Tracer(tmp_path / "whole")
    whole.frame(1, R.C2K, 0, 9, 2, memoryview(produce), "app")
    whole.frame(1, R.K2U, 0, 9, 2, memoryview(produce))
    whole.close()
    parts = Tracer(tmp_path / "parts")
    cut = len(produce) // 3
    parts.streamed(1, (R.C2K, R.K2U), 0, 9, 2, "app",
                   [bytearray(produce[:cut]), memoryview(produce)[cut:2 * cut], produce[2 * cut:]])
    parts.close()
    assert parts.queued_bytes == parts.done_bytes == 2 * len(produce)   # the queue's byte bound, balanced
    a = [r for r in read_trace(tmp_path / "whole") if r["type"] == "frame"]
    b = [r for r in read_trace(tmp_path / "parts") if r["type"] == "frame"]
    for r in a + b:
        r.pop("ts_ns"), r.pop("wall_ms")
    assert a == b and len(a) == 2 and a[0]["size"] == len(produce) and a[0]["batches"][0]["count"] == 5
