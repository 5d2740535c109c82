"""kshim's own Java helpers (shim/compat/java/*.java, e.g. CompatAdmin for Admin calls no Kafka CLI
tool makes): compiled against the installed Kafka jars into build/java by scripts/setup, or here on
first use when the class is missing or older than its source."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from shim.localkafka import KafkaInstall
from shim.localkafka.home import build_dir

SOURCES = Path(__file__).parent / "java"


def classes_dir() -> Path:
    return build_dir() / "java"


def ensure_compiled(kafka: KafkaInstall, name: str) -> Path:
    src, out = SOURCES / f"{name}.java", classes_dir()
    cls = out / f"{name}.class"
    if not cls.exists() or cls.stat().st_mtime < src.stat().st_mtime:
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", kafka.classpath, str(src)], check=True,
                       capture_output=True, text=True)
    return out


def run_helper(kafka: KafkaInstall, name: str, args: list[str], timeout: float = 90.0) -> dict:
    """Run helper `name` and return the JSON object it printed last."""
    out = ensure_compiled(kafka, name)
    cmd = kafka.java_cmd(name, args)
    cp = cmd.index("-cp") + 1
    cmd[cp] = f"{out}:{cmd[cp]}"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise AssertionError(f"{name} {args[0]} exited {proc.returncode}: {proc.stderr[-1500:]}")
    return json.loads(lines[-1])


def admin(kafka: KafkaInstall, command: str, bootstrap: str, *args: str) -> dict:
    return run_helper(kafka, "CompatAdmin", [command, bootstrap, *args])
