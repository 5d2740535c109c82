"""Reading the trace of a running kshim: the readable prefix of a `<name>.jsonl.gz.part` file.

The sink (sink.py) writes one gzip member per file and flushes it (a zlib sync flush) about once a
second, so a `.part` file is a gzip stream cut anywhere: after the last flush point, or in the middle
of a deflate block. `GzipLines` decompresses what is there and hands out complete lines only (a
partial last line waits for more data, a truncated or damaged tail just ends the data). A `.part`
file is renamed to `<name>` when it is closed: the reader opens whichever of the two exists, and an
open descriptor keeps reading the same file across the rename.

`snapshot_part` writes that readable prefix as a complete plain JSON lines file for Spark, which
cannot read a truncated gzip stream reliably (its gzip codec expects a complete stream)."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

CHUNK = 1 << 20
PART = ".part"


def final_name(path: Path) -> Path:
    """The name a trace file has once complete (`x.jsonl.gz.part` -> `x.jsonl.gz`)."""
    return path.with_name(path.name.removesuffix(PART))


class GzipLines:
    """Complete lines of one gzip JSON lines trace file, complete or still being written.

    `blocks()` yields byte strings of whole lines (each ends with a newline) up to what is readable
    now; call it again later to continue where it stopped (`--follow`). `done` once the gzip stream
    has ended (the file was closed by its writer), `error` if the data is damaged (the rest is skipped),
    `missing` if neither name exists any more."""

    def __init__(self, path: Path):
        self.path = final_name(Path(path))
        self._f = None
        self._d = zlib.decompressobj(wbits=31)
        self._rest = b""
        self.done = False
        self.missing = False
        self.error: str | None = None

    def _open(self):
        for p in (self.path.with_name(self.path.name + PART), self.path):  # renamed .part -> name on close
            try:
                return open(p, "rb")
            except FileNotFoundError:
                continue
        self.missing = True
        return None

    def blocks(self) -> Iterator[bytes]:
        if self.done or self.error:
            return
        if self._f is None:
            self._f = self._open()
            if self._f is None:
                return
        while True:
            chunk = self._f.read(CHUNK)
            if not chunk:
                if self._d.eof:         # the gzip trailer was read: the writer closed the file
                    self.done = True
                    self.close()
                return
            buf = self._rest + self._inflate(chunk)
            cut = buf.rfind(b"\n") + 1
            self._rest = buf[cut:]
            if cut:
                yield buf[:cut]
            if self.error:
                return

    def _inflate(self, chunk: bytes) -> bytes:
        """Decompressed bytes of `chunk`, following concatenated gzip members; damaged data sets `error`
        (what decompresses before the damage is kept)."""
        out = b""
        while chunk:
            if self._d.eof:             # another gzip member follows
                self._d = zlib.decompressobj(wbits=31)
            before = self._d.copy()
            try:
                out += self._d.decompress(chunk)
            except zlib.error as e:
                self.error = str(e)
                self.close()
                self._d = before
                return out + self._before_damage(chunk)
            chunk = self._d.unused_data if self._d.eof else b""
        return out

    def _before_damage(self, chunk: bytes) -> bytes:
        """Re-feeds a chunk that failed as a whole in slices, then bytes, up to the damage."""
        out = b""
        for step in (4096, 1):
            d = self._d.copy()
            for i in range(0, len(chunk), step):
                try:
                    out += d.decompress(chunk[i:i + step])
                except zlib.error:
                    chunk = chunk[i:i + step]
                    break
                self._d = d.copy()
            else:
                break
        return out

    def records(self) -> Iterator[dict]:
        for block in self.blocks():
            for line in block.split(b"\n"):
                if line:
                    yield json.loads(line)

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


@dataclass
class Snapshot:
    source: Path            # the trace file (its complete name)
    path: Path              # the plain JSON lines copy Spark reads
    records: int
    last_wall_ms: int | None
    complete: bool          # the writer closed the file while it was read: the copy is the whole file


def snapshot_part(part: Path, dest_dir: Path) -> Snapshot | None:
    """The readable prefix of a `.part` file (up to its last complete line) as `dest_dir/<name>.jsonl`;
    None if the file is gone (renamed and then removed) or holds no complete line yet."""
    reader = GzipLines(part)
    dest = Path(dest_dir) / reader.path.name.removesuffix(".gz")
    records, last = 0, b""
    with open(dest, "wb") as out:
        for block in reader.blocks():
            out.write(block)
            records += block.count(b"\n")
            last = block
    reader.close()
    if not records:
        dest.unlink()
        return None
    tail = last[:-1].rsplit(b"\n", 1)[-1]
    try:
        wall = json.loads(tail).get("wall_ms")
    except ValueError:
        wall = None
    return Snapshot(reader.path, dest, records, wall, reader.done)
