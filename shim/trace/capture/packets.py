"""Capture files into TCP segments: pcap and pcapng (gzip'd too) read with dpkt, the link, IP and TCP
headers parsed here (struct, no per-layer objects: a 1 GB capture is millions of packets).

Link types: Ethernet (with 802.1Q / 802.1ad VLAN tags), Linux cooked SLL and SLL2 (`tcpdump -i any`),
raw IP, BSD loopback (NULL / LOOP). IPv4 (fragments are counted and skipped: TCP over a fragmented
IP packet is rare and never reassembled) and IPv6 (extension headers walked). A segment cut by the
snap length carries the bytes captured and the length it had on the wire: the rest is a hole the
stream reassembly (streams.py) knows the size of.

A rotated set (`tcpdump -C/-W`, `-G`) is read as one input: the files are ordered by their first
packet's time and their packets merged in time order (`segments`).
"""

from __future__ import annotations

import gzip
import heapq
import struct
from dataclasses import dataclass, field
from pathlib import Path

# libpcap link types (https://www.tcpdump.org/linktypes.html)
NULL, ETHERNET, RAW_OLD, RAW_OLD2, RAW, LOOP, SLL, IPV4, IPV6, SLL2 = 0, 1, 12, 14, 101, 108, 113, 228, 229, 276
LINK_NAMES = {NULL: "BSD loopback", ETHERNET: "Ethernet", RAW_OLD: "raw IP", RAW_OLD2: "raw IP", RAW: "raw IP",
              LOOP: "OpenBSD loopback", SLL: "Linux cooked (SLL)", IPV4: "raw IPv4", IPV6: "raw IPv6",
              SLL2: "Linux cooked v2 (SLL2)"}

_U16 = struct.Struct(">H")
_IP4 = struct.Struct(">BBHHHBBH4s4s")
_TCP = struct.Struct(">HHIIBB")
FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10


@dataclass(slots=True)
class Segment:
    ts: float           # capture time, seconds since the epoch
    src: tuple          # (ip text, port)
    dst: tuple
    seq: int
    flags: int
    data: bytes         # the payload bytes captured
    wire_len: int       # the payload's length on the wire (> len(data): cut by the snap length)


@dataclass
class ReadStats:
    files: list = field(default_factory=list)    # {"file", "link", "packets", "first_ts", "last_ts", "error",
                                                 #  "cut_short": the file ends inside a packet record}
    packets: int = 0
    tcp: int = 0
    not_tcp: int = 0
    fragments: int = 0
    unknown_link: int = 0
    truncated: int = 0      # segments cut by the snap length


def _open(path: Path):
    f = open(path, "rb")
    if f.read(2) == b"\x1f\x8b":
        f.close()
        return gzip.open(path, "rb")
    f.seek(0)
    return f


def _ip_payload(link: int, buf: bytes) -> tuple[int, int] | None:
    """(IP version, offset of the IP header) of a link-layer frame, or None."""
    if link == ETHERNET:
        off, etype = 14, _U16.unpack_from(buf, 12)[0] if len(buf) >= 14 else 0
        while etype in (0x8100, 0x88A8, 0x9100) and len(buf) >= off + 4:   # VLAN tags
            etype = _U16.unpack_from(buf, off + 2)[0]
            off += 4
    elif link == SLL:
        off, etype = 16, _U16.unpack_from(buf, 14)[0] if len(buf) >= 16 else 0
    elif link == SLL2:
        off, etype = 20, _U16.unpack_from(buf, 0)[0] if len(buf) >= 20 else 0
    elif link in (NULL, LOOP):
        if len(buf) < 4:
            return None
        family = struct.unpack_from(">I" if link == LOOP else "=I", buf, 0)[0]
        if family not in (2, 24, 28, 30):        # AF_INET, AF_INET6 (BSDs differ)
            family = struct.unpack_from("<I", buf, 0)[0]
        return (4 if family == 2 else 6), 4
    elif link in (RAW, RAW_OLD, RAW_OLD2, IPV4, IPV6):
        return (buf[0] >> 4 if buf else 0), 0
    else:
        return None
    if etype == 0x0800:
        return 4, off
    if etype == 0x86DD:
        return 6, off
    return 0, off


def _ipv6_text(b: bytes) -> str:
    import ipaddress
    return str(ipaddress.IPv6Address(b))


_V6_EXT = {0, 43, 60, 135, 139, 140}    # hop-by-hop, routing, destination options, mobility, HIP, shim6


def parse_tcp(link: int, ts: float, buf: bytes, stats: ReadStats) -> Segment | None:
    """The TCP segment of one captured packet, or None (counted in `stats`)."""
    found = _ip_payload(link, buf)
    if found is None:
        stats.unknown_link += 1
        return None
    version, off = found
    if version == 4 and len(buf) >= off + 20:
        vihl, _, total, _, frag, _, proto, _, s, d = _IP4.unpack_from(buf, off)
        if proto != 6:
            stats.not_tcp += 1
            return None
        if frag & 0x3FFF:               # more-fragments flag or an offset
            stats.fragments += 1
            return None
        ihl = (vihl & 0x0F) * 4
        end = off + total if total else len(buf)   # TSO'd packets may say 0
        tcp = off + ihl
        src_ip, dst_ip = "%d.%d.%d.%d" % tuple(s), "%d.%d.%d.%d" % tuple(d)
    elif version == 6 and len(buf) >= off + 40:
        plen, nxt = struct.unpack_from(">HB", buf, off + 4)
        src_ip, dst_ip = _ipv6_text(buf[off + 8:off + 24]), _ipv6_text(buf[off + 24:off + 40])
        end, tcp = off + 40 + plen, off + 40
        while nxt in _V6_EXT and len(buf) >= tcp + 2:
            nxt, hlen = buf[tcp], (buf[tcp + 1] + 1) * 8
            tcp += hlen
        if nxt == 44:
            stats.fragments += 1
            return None
        if nxt != 6:
            stats.not_tcp += 1
            return None
    else:
        stats.not_tcp += 1
        return None
    if len(buf) < tcp + 20:
        stats.truncated += 1
        return None
    sport, dport, seq, _, doff, flags = _TCP.unpack_from(buf, tcp)
    data_at = tcp + (doff >> 4) * 4
    wire_len = max(end - data_at, 0)
    data = bytes(buf[data_at:min(end, len(buf))]) if data_at < len(buf) else b""
    if len(data) < wire_len:
        stats.truncated += 1
    stats.tcp += 1
    return Segment(ts, (src_ip, sport), (dst_ip, dport), seq, flags, data, wire_len)


class _ShortReads:
    """A capture file that notes its short reads: a whole file has one, the empty read at its end; a
    file cut inside a record (copied while tcpdump was writing) has a short read with bytes in it, or
    a second one (dpkt's readers stop there without a word)."""

    def __init__(self, f):
        self.f, self.short, self.cut = f, 0, False

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        if n is not None and n > 0 and len(data) < n:
            self.short += 1
            self.cut = self.cut or bool(data) or self.short > 1
        return data

    def __getattr__(self, name):
        return getattr(self.f, name)


CUT_SHORT = "the file ends mid-packet (copied while tcpdump was writing?): its last packet is lost"


def _packets(path: Path, stats: ReadStats, info: dict):
    import dpkt
    with _open(path) as raw:
        f = _ShortReads(raw)
        try:
            reader = dpkt.pcap.UniversalReader(f)
        except (ValueError, dpkt.NeedData, dpkt.UnpackError, struct.error, EOFError) as e:
            info["error"] = f"not a pcap or pcapng file: {e}"[:300]
            return
        link = reader.datalink()
        info["link"] = LINK_NAMES.get(link, f"link type {link}")
        try:
            for ts, buf in reader:
                info["packets"] += 1
                if info["first_ts"] is None:
                    info["first_ts"] = ts
                info["last_ts"] = ts
                yield ts, link, buf
        except (dpkt.NeedData, EOFError) as e:      # the data ran out inside a record (or a gzip stream)
            info["error"] = f"cut short after {info['packets']} packets: {CUT_SHORT} ({type(e).__name__})"[:300]
            info["cut_short"] = True
            return
        except (dpkt.UnpackError, OSError, struct.error) as e:
            info["error"] = f"unreadable after {info['packets']} packets: {type(e).__name__} {e}"[:300]
            return
        if f.cut:
            info["error"] = f"cut short after {info['packets']} packets: {CUT_SHORT}"
            info["cut_short"] = True


def _first_ts(path: Path) -> float:
    import dpkt
    try:
        with _open(path) as f:
            for ts, _ in dpkt.pcap.UniversalReader(f):
                return ts
    except Exception:
        pass
    return float("inf")


def segments(paths: list[Path], stats: ReadStats):
    """Every TCP segment of the files, in capture-time order across the files."""
    order = sorted(paths, key=lambda p: (_first_ts(p), str(p)))
    streams = []
    for p in order:
        info = {"file": str(p), "link": None, "packets": 0, "first_ts": None, "last_ts": None, "error": None,
                "cut_short": False}
        stats.files.append(info)
        streams.append(_packets(p, stats, info))
    merged = heapq.merge(*streams, key=lambda x: x[0]) if len(streams) > 1 else streams[0]
    for ts, link, buf in merged:
        stats.packets += 1
        seg = parse_tcp(link, ts, buf, stats)
        if seg is not None:
            yield seg
