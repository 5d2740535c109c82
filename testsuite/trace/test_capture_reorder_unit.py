"""`kshim trace import` of a capture that wrote the two directions' packets out of order (what a
capture on a busy host does: each direction is captured as it is handled): a close before the last
answer, an answer before its request when the capture began mid-connection, the broker's SYN+ACK
before the client's SYN. Each still gives the clean capture's frames, on one connection."""

from __future__ import annotations

from shim.trace.capture.command import run_import
from shim.trace.capture.packets import ETHERNET
from shim.trace.show import read_trace
from testsuite.trace.test_capture_formats_unit import CPORT, SPORT, _tcp, expected, frames, packets, write

__all__ = ["expected"]     # the module fixture: the clean capture's frames

WHOLE = 1 << 20            # one segment per frame


def _records(directory, kind: str) -> list[dict]:
    return [r for r in read_trace(directory) if r.get("type") == kind]


def _data(pkts, from_client: bool) -> list[int]:
    return [i for i, (_, c, seg) in enumerate(pkts) if c == from_client and len(seg) > 20]


def test_reset_captured_before_the_last_answer(expected, tmp_path):
    pkts = packets(split=WHOLE)
    fin_seq = int.from_bytes(pkts[-2][2][4:8], "big")
    pkts = pkts[:-2]                                  # no FINs: the client resets instead
    last = _data(pkts, False)[-1]
    rst = (pkts[last][0] + 0.0005, True, _tcp(CPORT, SPORT, fin_seq, 0x04, b""))
    pkts.insert(last, rst)                            # written before the answer it came after
    s = run_import([write(tmp_path / "c.pcap", ETHERNET, pkts=pkts)], tmp_path / "out", {SPORT})
    assert frames(tmp_path / "out") == expected and s["lost_frames"] == 0, s
    closes = _records(tmp_path / "out", "conn_close")
    assert len(closes) == 1 and abs(closes[0]["ts_ns"] - rst[0] * 1e9) < 1e3, closes


def test_answer_before_its_request_in_a_capture_begun_mid_connection(expected, tmp_path):
    pkts = packets(split=WHOLE)[2:]                   # no handshake
    first_req, first_ans = _data(pkts, True)[0], _data(pkts, False)[0]
    pkts[first_req], pkts[first_ans] = pkts[first_ans], pkts[first_req]
    s = run_import([write(tmp_path / "c.pcap", ETHERNET, pkts=pkts)], tmp_path / "out", {SPORT})
    assert frames(tmp_path / "out") == expected, s
    assert s["lost_frames"] == 0 and s["skipped_bytes"] == 0, s
    got = [r for r in _records(tmp_path / "out", "frame") if r["corr"] == 1]
    assert got[1]["ts_ns"] >= got[0]["ts_ns"]         # the answer is not placed before its request


def test_syn_ack_captured_before_the_syn(expected, tmp_path):
    pkts = packets()
    pkts[0], pkts[1] = pkts[1], pkts[0]
    s = run_import([write(tmp_path / "c.pcap", ETHERNET, pkts=pkts)], tmp_path / "out", {SPORT})
    assert frames(tmp_path / "out") == expected and s["lost_frames"] == 0, s
    assert len(_records(tmp_path / "out", "conn_open")) == 1 and s["kafka_connections"] == 1, s
