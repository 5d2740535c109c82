"""A real capture made worse, as real captures are: segments dropped, reordered, duplicated, the
capture started mid-stream, packets cut by a snap length (each fault seeded, so a run repeats)."""

from __future__ import annotations

import random
from pathlib import Path

FAULTS = ("drop", "reorder", "duplicate", "midstream", "snaplen")


def _read(path: Path) -> tuple[list[tuple[float, bytes]], int]:
    import dpkt
    with open(path, "rb") as f:
        r = dpkt.pcap.UniversalReader(f)
        return [(ts, bytes(buf)) for ts, buf in r], r.datalink()


def _write(path: Path, packets, link: int, snaplen: int | None = None) -> Path:
    import dpkt
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=snaplen or 262144, linktype=link)
        for ts, buf in packets:
            w.writepkt(buf[:snaplen] if snaplen else buf, ts)
    return path


def damaged(src: Path, out: Path, fault: str, seed: int = 1, rate: float = 0.01) -> Path:
    """`src` with one fault: drop (rate of the packets), reorder (rate of them swapped with the next),
    duplicate (rate of them sent twice), midstream (the first 40 % of the packets left out), snaplen
    (every packet cut to 200 bytes)."""
    rnd = random.Random(seed)
    packets, link = _read(src)
    if fault == "drop":
        packets = [p for p in packets if rnd.random() >= rate]
    elif fault == "reorder":
        packets = list(packets)
        for i in range(len(packets) - 1):
            if rnd.random() < rate:
                packets[i], packets[i + 1] = packets[i + 1], packets[i]
    elif fault == "duplicate":
        packets = [q for p in packets for q in ([p, p] if rnd.random() < rate else [p])]
    elif fault == "midstream":
        packets = packets[int(len(packets) * 0.4):]
    elif fault == "snaplen":
        return _write(out, packets, link, snaplen=200)
    else:
        raise ValueError(fault)
    return _write(out, packets, link)
