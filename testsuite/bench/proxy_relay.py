"""bench-proxy's relays (--peers relay-copy,relay-splice): a protocol-free TCP relay (relay/relay.go,
built with `go build` on first use) measured beside kshim, so the report shows the floor any
user-space proxy pays on this machine.

The benchmark broker gets one more listener per relay mode, advertised at the relay's port: a client
bootstrapping through the relay is sent back to it for every connection (metadata, the group
coordinator), as kshim does by rewriting Metadata. Modes: copy (read into a 256 KB buffer, write it:
the least a proxy that sees the bytes does) and splice (splice(2): the bytes never reach user space).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from shim.localkafka.home import build_dir
from testsuite.bench.gobuild import go_build
from testsuite.bench.proxy_figures import BenchError

HOST = "127.0.0.1"
MODES = ("copy", "splice")
SOURCE_DIR = Path(__file__).with_name("relay")


def binary() -> Path:
    return go_build(SOURCE_DIR, build_dir() / "bench" / "relay", "--peers relay-copy,relay-splice")


def listener_overrides(broker_port: int, controller_port: int, ports: dict[str, tuple[int, int]]) -> dict[str, str]:
    """Broker settings adding, per mode, a listener on ports[mode][0] advertised at the relay's
    ports[mode][1] (LocalKafka's own PLAINTEXT and CONTROLLER listeners kept as they are)."""
    names = {m: m.upper() for m in ports}
    listen = [f"PLAINTEXT://{HOST}:{broker_port}", f"CONTROLLER://{HOST}:{controller_port}"]
    advertised = list(listen)
    for m, (own, relay) in ports.items():
        listen.append(f"{names[m]}://{HOST}:{own}")
        advertised.append(f"{names[m]}://{HOST}:{relay}")
    proto = ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"] + [f"{n}:PLAINTEXT" for n in names.values()]
    return {"listeners": ",".join(listen), "advertised.listeners": ",".join(advertised),
            "listener.security.protocol.map": ",".join(proto)}


class Relay:
    def __init__(self, mode: str, listen_port: int, upstream_port: int, log_file: Path):
        self.mode, self.port, self.upstream_port, self.log_file = mode, listen_port, upstream_port, log_file
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def start(self) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "wb") as log:
            self.proc = subprocess.Popen([str(binary()), "-listen", self.bootstrap,
                                          "-upstream", f"{HOST}:{self.upstream_port}", "-mode", self.mode],
                                         stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while b"relay (" not in self.log_file.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"relay ({self.mode}) did not start: {self.log_file.read_text()[-1000:]}")
            time.sleep(0.05)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.proc.terminate()
            self.proc.wait(10)
