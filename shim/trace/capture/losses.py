"""What an import lost, said where a person reads the result: `kshim trace import` prints it and
`kshim trace analyze` reads it from the trace directory's `import-summary.json` into its console
output and the top of report.html. Each loss comes with what to do about it; a figure that is zero
is left out ("cut by 0 missing bytes" says nothing)."""

from __future__ import annotations

import json
from pathlib import Path

from ..offsets_topic.output import SUMMARY_FILE, records_losses


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _share(part: int, whole: int) -> str:
    if not whole:
        return ""
    pct = 100 * part / whole
    return f" ({pct:.0f}% of them)" if pct >= 1 else " (under 1% of them)"


def import_losses(s: dict) -> list[dict]:
    """[{"what", "fix"}] for an import summary (pipeline.finish_import's); empty when nothing was lost.
    `fix` may be None (nothing to do but know it)."""
    out = []
    snap = s.get("segments_cut_by_snaplen") or 0
    lost, missing = s.get("lost_frames") or 0, s.get("gap_bytes") or 0
    frames = s.get("frames") or 0
    if snap:
        out.append({"what": f"the capture's snap length cut {_count(snap, 'TCP segment')}"
                            f"{_share(snap, s.get('tcp_segments') or 0)}: the Kafka frames in them are lost",
                    "fix": "take the capture again with `tcpdump -s 0` (whole packets)"})
    if lost or missing:
        parts = [f"{_count(lost, 'frame')} lost{_share(lost, lost + frames)}" if lost else "",
                 f"{_count(missing, 'byte')} missing from the TCP streams" if missing else ""]
        out.append({"what": "; ".join(p for p in parts if p) + " (packets the capture did not keep)",
                    "fix": None if snap else "the capturing host dropped packets: give tcpdump a larger buffer "
                                             "(`-B 65536`) and a narrower filter, and check the 'packets "
                                             "dropped by kernel' line tcpdump prints when it stops"})
    resyncs, skipped = s.get("resyncs") or 0, s.get("skipped_bytes") or 0
    if resyncs or skipped:
        parts = [_count(resyncs, "re-synchronisation") if resyncs else "",
                 f"{_count(skipped, 'byte')} skipped until the next frame start" if skipped else ""]
        out.append({"what": ", ".join(p for p in parts if p) + " (connections the capture began in the middle "
                                                               "of, or after a hole)", "fix": None})
    for f in s.get("captures") or ():
        if f.get("cut_short"):
            out.append({"what": f"{f['file']}: {f.get('error') or 'the file ends mid-packet'}",
                        "fix": "copy the capture file after tcpdump has stopped (or take a finished file of a "
                               "`-C`/`-W` ring)"})
        elif f.get("error"):
            out.append({"what": f"{f['file']}: {f['error']}", "fix": None})
    tls = s.get("tls_connections") or ()
    if tls:
        out.append({"what": f"{_count(len(tls), 'TLS connection')} not decodable (encrypted): "
                            + ", ".join(tls[:3]) + (" ..." if len(tls) > 3 else ""),
                    "fix": "capture where the traffic is plain (a PLAINTEXT or SASL_PLAINTEXT listener)"})
    undecoded = s.get("undecoded_frames") or 0
    if undecoded:
        out.append({"what": f"{_count(undecoded, 'frame')} could not be decoded (header fields only)", "fix": None})
    return out + records_losses(s)


def loss_lines(s: dict) -> list[str]:
    """import_losses as lines of text: "lost: WHAT; FIX"."""
    return [f"lost: {x['what']}" + (f"; {x['fix']}" if x["fix"] else "") for x in import_losses(s)]


def read_import_summary(directory: Path) -> dict | None:
    """`kshim trace import`'s summary in the trace directory (None: not an imported trace, or unreadable)."""
    try:
        s = json.loads((Path(directory) / SUMMARY_FILE).read_text())
    except (OSError, ValueError):
        return None
    return s if isinstance(s, dict) else None


def capture_end_wall_ms(s: dict | None) -> int | None:
    """The capture's last packet (wall ms) of an import summary."""
    lasts = [c["last_ts"] for c in (s or {}).get("captures") or () if c.get("last_ts") is not None]
    return int(max(lasts) * 1000) if lasts else None
