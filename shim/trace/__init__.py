"""Wire traces: every frame both ways on every connection, and the coordinator's events, in rotating
compressed files (`kshim run --trace DIR`), and `kshim trace show DIR` to read them. See
docs/kshim-trace.md. records.py builds the records, tracer.py queues and writes them off the event
loop, sink.py holds the file formats, show.py is the reader."""

from __future__ import annotations


def open_tracer(cfg):
    """The Tracer for a Config, or None when tracing is off."""
    if not cfg.trace_dir:
        return None
    from .tracer import Tracer
    return Tracer(cfg.trace_dir, bodies=cfg.trace_bodies, rotate_mb=cfg.trace_rotate_mb, fmt=cfg.trace_format)
