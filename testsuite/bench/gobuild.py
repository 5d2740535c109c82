"""Go helpers of the benchmarks (bench-proxy's relays, bench-commits --proxy-floor): built from their
source folder with `go build` into build/bench/ when missing or older than a source."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def go_build(source_dir: Path, binary: Path, option: str) -> Path:
    """`binary` built from every .go file of `source_dir` (its cwd), unless newer than all of them;
    SystemExit naming `option` when Go is missing or the build fails."""
    sources = sorted(p.name for p in source_dir.glob("*.go"))
    if binary.exists() and binary.stat().st_mtime >= max((source_dir / s).stat().st_mtime for s in sources):
        return binary
    go = shutil.which("go")
    if go is None:
        raise SystemExit(f"{option} needs Go (the `go` command) on PATH to build {source_dir}")
    binary.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([go, "build", "-o", str(binary), *sources], cwd=source_dir, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"go build in {source_dir} failed:\n{done.stderr[-3000:]}")
    return binary
