"""`kshim trace import --master URL`: one Spark task per capture file (a rotated set's files in
parallel), each writing its frame records into the trace directory (a directory every executor can
write: this machine's, or a shared one) and handing its group frames back to the driver, which infers
the coordinator events (pipeline.finish_import). A TCP connection that spans two files is two
connections here, each started mid-stream: its frames are re-found (framing.py); an answer in the
next file than its request is counted as unmatched."""

from __future__ import annotations

from pathlib import Path


def _task(item, out: str, ports: list[int], bodies: bool, fmt: str, detect: bool, rotate_mb: float):
    from shim.trace.capture.pipeline import CONN_STRIDE, import_part
    i, path = item
    part, frames = import_part([Path(path)], Path(out), set(ports), bodies, fmt, detect,
                               conn_base=i * CONN_STRIDE, rotate_mb=rotate_mb)
    return [(part, frames)]


def import_on_spark(master: str, captures: list[Path], out: Path, ports: set[int], bodies: bool, fmt: str,
                    detect: bool, rotate_mb: float) -> tuple[list[dict], list[dict]]:
    from ..analyze.session import spark_session
    spark = spark_session(master, app_name="kshim trace import")
    try:
        out.mkdir(parents=True, exist_ok=True)
        items = [(i, str(Path(p).resolve())) for i, p in enumerate(captures)]
        o, pl = str(out.resolve()), sorted(ports)
        got = spark.sparkContext.parallelize(items, len(items)).flatMap(
            lambda it: _task(it, o, pl, bodies, fmt, detect, rotate_mb)).collect()
    finally:
        spark.stop()
    parts = [p for p, _ in got]
    frames = [f for _, fs in got for f in fs]
    return parts, frames
