"""Rotating trace files: gzip-compressed JSON lines (always available) or Parquet (`kshim[trace]`).

A file is written as `<name>.part` and renamed when it is closed (rotation or shutdown), so a reader
that skips `.part` files (Spark) only sees complete files. JSON lines files are also flushed (a gzip
sync point) at least once a second while records come in, so `kshim trace show [--follow]` and
`kshim trace analyze` (shim/trace/live.py) read a `.part` file of a running kshim. A Parquet file has
no footer, so is unreadable, until closed: it is closed at `rotate_bytes` or PARQUET_MAX_AGE_S after
it was opened, whichever comes first, so a live analysis misses at most that much.
Names sort in time order: `trace-<UTC yyyymmddTHHMMSS>-<pid>-<seq>.jsonl.gz` (or `.parquet`).
"""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

FORMATS = ("jsonl", "parquet")
FLUSH_S = 1.0            # JSON lines: a gzip sync flush this often while records come in
PARQUET_MAX_AGE_S = 60   # Parquet: close (complete) a file this long after it was opened

# Parquet columns (JSON lines records carry the same keys; `body` and `batches` are nested JSON there
# and JSON text here). Everything a Spark job filters on is a top-level column.
COLUMNS = (("type", "string"), ("ts_ns", "int64"), ("wall_ms", "int64"), ("conn", "int64"),
           ("dir", "string"), ("peer", "string"), ("listener", "string"), ("upstream", "string"),
           ("client_id", "string"), ("client_sw", "string"), ("client_sw_version", "string"),
           ("api_key", "int32"), ("api", "string"), ("api_version", "int32"), ("corr", "int32"),
           ("size", "int64"), ("group", "string"), ("member", "string"), ("instance", "string"),
           ("generation", "int32"), ("event", "string"), ("error_codes", "list<int32>"),
           ("decode_error", "string"), ("body", "json"), ("batches", "json"), ("info", "json"))


def _dumps(rec: dict) -> str:
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False, default=str)


try:  # several times faster than json for the writer's records; the same text
    import orjson

    _OPTS = orjson.OPT_NON_STR_KEYS

    def _line(rec: dict) -> bytes:
        try:
            return orjson.dumps(rec, default=str, option=_OPTS)
        except TypeError:   # what orjson refuses (an int beyond 64 bits): as json writes it
            return _dumps(rec).encode()
except ImportError:  # pragma: no cover - orjson is a dependency; where it has no build, json
    def _line(rec: dict) -> bytes:
        return _dumps(rec).encode()


def dump_lines(records: list[dict]) -> bytes:
    """JSON lines, UTF-8, each record compact on one line."""
    return b"".join(_line(r) + b"\n" for r in records)


class _Rotating:
    suffix = ""

    def __init__(self, directory: Path, rotate_bytes: int, tag: str = ""):
        self.dir = Path(directory)
        self.tag = f"-{tag}" if tag else ""   # writers sharing a directory and a pid (trace import parts)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rotate_bytes = max(rotate_bytes, 64 * 1024)
        self.seq = 0
        self.path: Path | None = None
        self.files: list[Path] = []  # closed files, in order
        self.opened = 0.0            # time.monotonic() when the open file was opened

    def _next_path(self) -> Path:
        self.seq += 1
        self.opened = time.monotonic()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        return self.dir / f"trace-{stamp}-{os.getpid()}{self.tag}-{self.seq:05d}{self.suffix}"

    def _finish(self) -> None:
        if self.path is not None:
            part = self.path.with_name(self.path.name + ".part")
            part.replace(self.path)
            self.files.append(self.path)
            self.path = None


class JsonLinesSink(_Rotating):
    suffix = ".jsonl.gz"

    def __init__(self, directory: Path, rotate_bytes: int, level: int = 1, tag: str = ""):
        super().__init__(directory, rotate_bytes, tag)
        self.level = level
        self._raw = self._gz = None
        self._flushed = 0.0

    def _open(self) -> None:
        self.path = self._next_path()
        self._raw = open(self.path.with_name(self.path.name + ".part"), "wb")
        self._gz = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=self.level, mtime=0)

    @property
    def is_open(self) -> bool:
        return self._gz is not None

    def write(self, records: list[dict]) -> None:
        """Append records (opening a new file if none is open); rotate once the file is big enough."""
        if self._gz is None:
            self._open()
        self._gz.write(dump_lines(records))
        if self._raw.tell() >= self.rotate_bytes:
            self.close()
        elif time.monotonic() - self._flushed >= FLUSH_S:   # the writer may never be idle to flush
            self.flush()

    def flush(self) -> None:
        if self._gz is not None:
            self._gz.flush()
            self._raw.flush()
            self._flushed = time.monotonic()

    def close(self) -> None:
        if self._gz is not None:
            self._gz.close()
            self._raw.close()
            self._gz = self._raw = None
            self._finish()


class ParquetSink(_Rotating):
    suffix = ".parquet"

    def __init__(self, directory: Path, rotate_bytes: int, compression: str = "zstd", tag: str = ""):
        import pyarrow as pa  # kshim[trace]
        import pyarrow.parquet as pq
        super().__init__(directory, rotate_bytes, tag)
        self.pa, self.pq, self.compression = pa, pq, compression
        kinds = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "json": pa.string(),
                 "list<int32>": pa.list_(pa.int32())}
        self.schema = pa.schema([(name, kinds[kind]) for name, kind in COLUMNS])
        self._json_cols = {name for name, kind in COLUMNS if kind == "json"}
        self._writer = None
        self._raw = None

    @property
    def is_open(self) -> bool:
        return self._writer is not None

    def write(self, records: list[dict]) -> None:
        if self._writer is None:
            self.path = self._next_path()
            self._raw = open(self.path.with_name(self.path.name + ".part"), "wb")
            self._writer = self.pq.ParquetWriter(self._raw, self.schema, compression=self.compression)
        cols: dict[str, list] = {name: [] for name, _ in COLUMNS}
        known = cols.keys()
        for r in records:
            extra = {k: v for k, v in r.items() if k not in known}
            for name, values in cols.items():
                v = r.get(name)
                if name in self._json_cols:
                    if name == "info" and extra:
                        v = {**(v or {}), **extra}
                    v = None if v is None else _dumps(v)
                values.append(v)
        self._writer.write_table(self.pa.table(cols, schema=self.schema))
        if self._raw.tell() >= self.rotate_bytes:
            self.close()
        else:
            self.flush()

    def flush(self) -> None:
        """A Parquet file is readable only once closed: close it once PARQUET_MAX_AGE_S old."""
        if self._writer is not None and time.monotonic() - self.opened >= PARQUET_MAX_AGE_S:
            self.close()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._raw.close()
            self._writer = self._raw = None
            self._finish()


def open_sink(fmt: str, directory: Path, rotate_bytes: int, tag: str = ""):
    if fmt == "parquet":
        return ParquetSink(directory, rotate_bytes, tag=tag)
    return JsonLinesSink(directory, rotate_bytes, tag=tag)


def parquet_available() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
        return True
    except ImportError:
        return False
