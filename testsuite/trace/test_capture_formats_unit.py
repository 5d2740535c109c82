"""`kshim trace import` on the capture shapes real captures come in, built here packet by packet around
one Kafka exchange (ApiVersions, JoinGroup with its answer, SaslAuthenticate): pcap and pcapng, gzip'd,
a rotated set given out of order, every link type it reads (Ethernet, 802.1Q VLAN, Linux SLL and SLL2,
raw IP, BSD loopback), IPv4 and IPv6; each must give the same frame records. Also: a TLS connection is
counted and never decoded, SASL secrets are redacted, a connection on another port is found by its
first request, segments split inside frames and sizes are reassembled."""

from __future__ import annotations

import gzip
import struct

import pytest

from kcodec import api
from kcodec.generated.join_group import JoinGroupRequestProtocol
from kcodec.protocol import ApiKey
from shim.trace.capture.command import run_import
from shim.trace.capture.packets import ETHERNET, LOOP, NULL, RAW, SLL, SLL2
from shim.trace.show import read_trace

CLIENT4, SERVER4 = bytes([10, 0, 0, 7]), bytes([10, 0, 0, 9])
CLIENT6, SERVER6 = bytes(15) + b"\x07", bytes(15) + b"\x09"
CPORT, SPORT = 40001, 9092


def _request(key: int, version: int, corr: int, body) -> bytes:
    hv = api.request_header_version(key, version)
    frame = api.RequestHeader(request_api_key=key, request_api_version=version, correlation_id=corr,
                              client_id="formats-test").encode(hv) + body.encode(version)
    return struct.pack(">i", len(frame)) + frame


def _response(key: int, version: int, corr: int, body) -> bytes:
    frame = api.encode_response(key, version, corr, body)
    return struct.pack(">i", len(frame)) + frame


def exchange() -> list[tuple[bool, bytes]]:
    """(from the client?, bytes) of one conversation."""
    R, S = api.REQUESTS, api.RESPONSES
    join = R[ApiKey.JOIN_GROUP](group_id="fmt-group", session_timeout_ms=10000, rebalance_timeout_ms=30000,
                                member_id="m-1", group_instance_id=None, protocol_type="consumer",
                                protocols=[JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01")],
                                reason="test")
    joined = S[ApiKey.JOIN_GROUP](error_code=0, generation_id=1, protocol_type="consumer", protocol_name="range",
                                  leader="m-1", skip_assignment=False, member_id="m-1", members=[])
    return [
        (True, _request(ApiKey.API_VERSIONS, 3, 1, R[ApiKey.API_VERSIONS](client_software_name="t",
                                                                         client_software_version="1"))),
        (False, _response(ApiKey.API_VERSIONS, 3, 1, S[ApiKey.API_VERSIONS](error_code=0, api_keys=[]))),
        (True, _request(ApiKey.SASL_AUTHENTICATE, 2, 2, R[ApiKey.SASL_AUTHENTICATE](auth_bytes=b"\x00u\x00secret-pw"))),
        (False, _response(ApiKey.SASL_AUTHENTICATE, 2, 2, S[ApiKey.SASL_AUTHENTICATE](
            error_code=0, error_message=None, auth_bytes=b"", session_lifetime_ms=0))),
        (True, _request(ApiKey.JOIN_GROUP, 9, 3, join)),
        (False, _response(ApiKey.JOIN_GROUP, 9, 3, joined)),
    ]


def _tcp(sport: int, dport: int, seq: int, flags: int, data: bytes) -> bytes:
    return struct.pack(">HHIIBBHHH", sport, dport, seq, 0, 5 << 4, flags, 65535, 0, 0) + data


def _ip(v6: bool, src: bytes, dst: bytes, seg: bytes) -> bytes:
    if v6:
        return struct.pack(">IHBB", 6 << 28, len(seg), 6, 64) + src + dst + seg
    return struct.pack(">BBHHHBBH", 0x45, 0, 20 + len(seg), 0, 0x4000, 64, 6, 0) + src + dst + seg


def _link(link: int, v6: bool, ip: bytes, vlan: bool = False) -> bytes:
    etype = 0x86DD if v6 else 0x0800
    if link == ETHERNET:
        tag = struct.pack(">HH", 0x8100, 42) if vlan else b""
        return b"\x02" * 6 + b"\x04" * 6 + tag + struct.pack(">H", etype) + ip
    if link == SLL:
        return struct.pack(">HHH8sH", 0, 772, 6, b"", etype) + ip
    if link == SLL2:
        return struct.pack(">HHiHBB8s", etype, 0, 1, 772, 0, 6, b"") + ip
    if link in (NULL, LOOP):
        family = 24 if v6 else 2
        return (struct.pack(">I", family) if link == LOOP else struct.pack("=I", family)) + ip
    return ip


def packets(v6: bool = False, port: int = SPORT, split: int = 7, t0: float = 1_800_000_000.0):
    """(ts, src is client, tcp segment) of a connection: handshake, the exchange cut into `split`-byte
    segments (frames and size prefixes cut anywhere), FINs."""
    out, t = [], t0
    cseq, sseq = 1000, 5000
    out.append((t, True, _tcp(CPORT, port, cseq, 0x02, b"")))
    out.append((t + 0.0001, False, _tcp(port, CPORT, sseq, 0x12, b"")))
    cseq, sseq = cseq + 1, sseq + 1
    for i, (from_client, data) in enumerate(exchange()):
        t = t0 + 0.01 * (i + 1)
        for k in range(0, len(data), split):
            piece = data[k:k + split]
            if from_client:
                out.append((t, True, _tcp(CPORT, port, cseq, 0x18, piece)))
                cseq += len(piece)
            else:
                out.append((t, False, _tcp(port, CPORT, sseq, 0x18, piece)))
                sseq += len(piece)
            t += 1e-6
    out.append((t + 0.01, True, _tcp(CPORT, port, cseq, 0x11, b"")))
    out.append((t + 0.011, False, _tcp(port, CPORT, sseq, 0x11, b"")))
    return out


def write(path, link: int, v6: bool = False, fmt: str = "pcap", vlan: bool = False, pkts=None, gz: bool = False):
    import dpkt
    src, dst = (CLIENT6, SERVER6) if v6 else (CLIENT4, SERVER4)
    opener = gzip.open if gz else open
    with opener(path, "wb") as f:
        w = dpkt.pcapng.Writer(f, snaplen=65535, linktype=link) if fmt == "pcapng" else \
            dpkt.pcap.Writer(f, snaplen=65535, linktype=link)
        for ts, from_client, seg in pkts if pkts is not None else packets(v6):
            ip = _ip(v6, src, dst, seg) if from_client else _ip(v6, dst, src, seg)
            w.writepkt(_link(link, v6, ip, vlan), ts)
    return path


def frames(directory) -> list[tuple]:
    return [(r["dir"], r["api"], r["api_version"], r["corr"], r["size"], r.get("group"), r.get("decode_error"))
            for r in read_trace(directory) if r.get("type") == "frame"]


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    d = tmp_path_factory.mktemp("formats")
    s = run_import([write(d / "plain.pcap", ETHERNET)], d / "plain", {SPORT})
    assert s["kafka_connections"] == 1 and s["lost_frames"] == 0 and s["resyncs"] == 0, s
    got = frames(d / "plain")
    assert [(f[0], f[1], f[3]) for f in got] == [
        ("client->broker", "ApiVersions", 1), ("broker->client", "ApiVersions", 1),
        ("client->broker", "SaslAuthenticate", 2), ("broker->client", "SaslAuthenticate", 2),
        ("client->broker", "JoinGroup", 3), ("broker->client", "JoinGroup", 3)]
    assert all(f[6] is None for f in got) and got[4][5] == got[5][5] == "fmt-group"
    return got


@pytest.mark.parametrize("link, v6, fmt, vlan, gz", [
    (ETHERNET, True, "pcap", False, False), (ETHERNET, False, "pcap", True, False),
    (SLL, False, "pcap", False, False), (SLL2, True, "pcap", False, False), (RAW, False, "pcap", False, False),
    (NULL, False, "pcap", False, False), (LOOP, True, "pcap", False, False),
    (ETHERNET, False, "pcapng", False, False), (SLL2, False, "pcapng", False, True),
    (ETHERNET, True, "pcap", False, True)])
def test_every_capture_shape_gives_the_same_frames(expected, tmp_path, link, v6, fmt, vlan, gz):
    path = write(tmp_path / f"c.{fmt}{'.gz' if gz else ''}", link, v6, fmt, vlan, gz=gz)
    s = run_import([path], tmp_path / "out", {SPORT})
    assert frames(tmp_path / "out") == expected, s


def test_rotated_set_given_out_of_order_is_one_input(expected, tmp_path):
    pkts = packets()
    third = len(pkts) // 3
    paths = [write(tmp_path / f"rot.pcap{i or ''}", ETHERNET, pkts=pkts[i * third:(i + 1) * third if i < 2 else None])
             for i in range(3)]
    s = run_import([paths[2], paths[0], paths[1]], tmp_path / "out", {SPORT})
    assert s["kafka_connections"] == 1 and s["lost_frames"] == 0
    assert frames(tmp_path / "out") == expected


def test_sasl_secret_redacted_and_group_fields_promoted(expected, tmp_path):
    run_import([write(tmp_path / "c.pcap", ETHERNET)], tmp_path / "out", {SPORT})
    recs = [r for r in read_trace(tmp_path / "out") if r.get("type") == "frame"]
    sasl = next(r for r in recs if r["api"] == "SaslAuthenticate" and r["dir"] == "client->broker")
    assert sasl["body"]["authBytes"].startswith("<redacted") and "secret" not in str(sasl)
    join = next(r for r in recs if r["api"] == "JoinGroup" and r["dir"] == "broker->client")
    assert (join["group"], join["generation"], join["member"]) == ("fmt-group", 1, "m-1")


def test_other_port_found_by_its_first_request_unless_no_detect(expected, tmp_path):
    path = write(tmp_path / "c.pcap", ETHERNET, pkts=packets(port=19999))
    run_import([path], tmp_path / "found", {SPORT})
    assert frames(tmp_path / "found") == expected
    s = run_import([path], tmp_path / "ports-only", {SPORT}, detect=False)
    assert s["kafka_connections"] == 0 and frames(tmp_path / "ports-only") == []


def test_tls_connection_counted_not_decoded(tmp_path):
    hello = b"\x16\x03\x01\x00\x40" + b"\x01" + bytes(63)
    pkts = [(1.0, True, _tcp(CPORT, SPORT, 1, 0x02, b"")), (1.1, False, _tcp(SPORT, CPORT, 9, 0x12, b"")),
            (1.2, True, _tcp(CPORT, SPORT, 2, 0x18, hello)), (1.3, False, _tcp(SPORT, CPORT, 10, 0x18, b"\x16\x03\x03" + bytes(60)))]
    s = run_import([write(tmp_path / "tls.pcap", ETHERNET, pkts=pkts)], tmp_path / "out", {SPORT})
    assert s["tls_connections"] == [f"10.0.0.7:{CPORT} -> 10.0.0.9:{SPORT}"] and s["frames"] == 0, s


def test_not_a_capture_is_a_clear_error(tmp_path, capsys):
    from shim.cli import main
    bad = tmp_path / "notes.txt"
    bad.write_text("not a capture")
    assert main(["trace", "import", str(bad), "--out", str(tmp_path / "out")]) == 1
    assert "not a pcap or pcapng file" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_a_capture_file_cut_mid_packet_is_reported_with_what_to_do(expected, tmp_path, fmt):
    from shim.trace.capture.command import summary_text
    whole = write(tmp_path / f"whole.{fmt}", ETHERNET, fmt=fmt)
    s = run_import([whole], tmp_path / "whole", {SPORT})
    assert not s["captures"][0]["cut_short"] and "lost:" not in summary_text(s)
    data = whole.read_bytes()
    cut = tmp_path / f"cut.{fmt}"
    cut.write_bytes(data[:-9])          # the last record (the server's FIN) ends 9 bytes early
    s = run_import([cut], tmp_path / "out", {SPORT})
    assert s["captures"][0]["cut_short"], s["captures"]
    assert frames(tmp_path / "out") == expected          # what came before is all there
    text = summary_text(s)
    assert "ends mid-packet (copied while tcpdump was writing?)" in text
    assert "copy the capture file after tcpdump has stopped" in text


def test_a_snap_length_capture_says_to_take_it_again_with_s0_and_no_zero_figures(tmp_path):
    import re
    from shim.trace.capture.command import summary_text
    from testsuite.trace.capture_faults import _read, _write
    src = write(tmp_path / "whole.pcap", ETHERNET, pkts=packets(split=400))
    pkts, link = _read(src)
    s = run_import([_write(tmp_path / "s128.pcap", pkts, link, snaplen=80)], tmp_path / "out", {SPORT})
    assert s["segments_cut_by_snaplen"] > 0 and s["lost_frames"] > 0
    text = summary_text(s)
    assert "take the capture again with `tcpdump -s 0`" in text
    assert f"the capture's snap length cut {s['segments_cut_by_snaplen']} TCP segment" in text
    lost = "\n".join(line for line in text.splitlines() if line.startswith("lost:"))
    assert not re.search(r"(?<![\d.])0 (missing )?(byte|frame|re-sync|segment)", lost), lost
