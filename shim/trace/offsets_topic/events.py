"""Trace `event` records made from the coordinator's records: every one says it came from the records
(`source: "records"`) and, where the records cannot say why, that its reason is inferred."""

from __future__ import annotations

SOURCE = "records"


class EventOut:
    """Collects one group's events; `ts_ns` keeps the records' order inside one millisecond."""

    def __init__(self, group: str):
        self.group = group
        self.out: list[dict] = []
        self._last_ms: int | None = None
        self._seq = 0

    def emit(self, rec: dict, kind: str, inferred: bool = False, **fields) -> dict:
        ms = rec["ts_ms"]
        self._seq = self._seq + 1 if ms == self._last_ms else 0
        self._last_ms = ms
        body = {"event": kind, "group": self.group, "source": SOURCE,
                "record": f"{rec['partition']}@{rec['offset']}",
                **{k: v for k, v in fields.items() if v is not None}}
        if inferred:
            body["inferred"] = True
        ev = {"type": "event", "event": kind, "group": self.group, "ts_ns": ms * 1_000_000 + min(self._seq, 999) * 1000,
              "wall_ms": ms, "body": body}
        if inferred:
            ev["inferred"] = True
        for k in ("member", "instance", "generation"):
            if fields.get(k) is not None:
                ev[k] = fields[k]
        self.out.append(ev)
        return ev
