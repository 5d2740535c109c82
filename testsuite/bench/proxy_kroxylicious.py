"""bench-proxy's peer: Kroxylicious (kroxylicious/pom.xml resolves kroxylicious-runtime from Maven
Central; kroxylicious/KroxyliciousBench.java starts its KafkaProxy), configured as a pass-through
proxy with no filters in front of the benchmark broker, measured like kshim.

Kroxylicious serves a bootstrap port and one port per broker node (port + 1 + node id), all on
127.0.0.1, and rewrites the brokers' addresses in Metadata to those ports, as kshim does. Built with
Maven and javac into build/bench/kroxylicious on first use (and again when a source is newer).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from shim.localkafka.home import build_dir
from testsuite.bench.proxy_figures import BenchError

HOST = "127.0.0.1"
SOURCE_DIR = Path(__file__).with_name("kroxylicious")
MAIN = "KroxyliciousBench"
SERVICE = "io.kroxylicious.proxy.service.ClusterNetworkAddressConfigProviderService"


def build() -> Path:
    """build/bench/kroxylicious, holding lib/ (the jars) and classes/ (the launcher and its plugin)."""
    out = build_dir() / "bench" / "kroxylicious"
    lib, classes = out / "lib", out / "classes"
    stamp = classes / f"{MAIN}.class"
    newest = max(p.stat().st_mtime for p in SOURCE_DIR.iterdir())
    if stamp.exists() and stamp.stat().st_mtime >= newest and any(lib.glob("kroxylicious-runtime-*.jar")):
        return out
    for tool in ("mvn", "javac"):
        if shutil.which(tool) is None:
            raise BenchError(f"the Kroxylicious peer needs `{tool}` on PATH (scripts/setup installs Maven and a JDK)")
    shutil.rmtree(out, ignore_errors=True)
    _run(["mvn", "-B", "-q", "-f", str(SOURCE_DIR / "pom.xml"), "dependency:copy-dependencies",
          f"-DoutputDirectory={lib}"], "resolving Kroxylicious from Maven Central")
    _run(["javac", "-cp", f"{lib}/*", "-d", str(classes), str(SOURCE_DIR / f"{MAIN}.java")], "compiling the launcher")
    services = classes / "META-INF" / "services"
    services.mkdir(parents=True, exist_ok=True)
    (services / SERVICE).write_text(f"{MAIN}$LoopbackPortPerNode\n")
    return out


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"{what} failed ({' '.join(cmd[:4])} ...):\n{(done.stdout + done.stderr)[-3000:]}")


def config(upstream: str, port: int, nodes: int) -> str:
    """One virtual cluster in front of `upstream`, its bootstrap on `port` and node n on port + 1 + n.
    Kroxylicious takes YAML; this is JSON, which YAML reads."""
    return ('{"virtualClusters": [{"name": "bench", "targetCluster": {"bootstrapServers": "%s"}, '
            '"clusterNetworkAddressConfigProvider": {"type": "%s$LoopbackPortPerNode", '
            '"config": {"bootstrapPort": %d, "nodes": %d}}}]}\n' % (upstream, MAIN, port, nodes))


class Kroxylicious:
    """One Kroxylicious process on ports port .. port + nodes."""

    def __init__(self, upstream: str, port: int, nodes: int, workdir: Path, heap: str = "512m"):
        self.upstream, self.port, self.nodes, self.workdir, self.heap = upstream, port, nodes, workdir, heap
        self.log_file = workdir / "kroxylicious.log"
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def start(self, timeout: float = 60) -> None:
        home = build()
        self.workdir.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / "kroxylicious.yaml"
        conf.write_text(config(self.upstream, self.port, self.nodes))
        cmd = ["java", f"-Xms{self.heap}", f"-Xmx{self.heap}", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
               "-cp", f"{home / 'classes'}:{home / 'lib'}/*", MAIN, str(conf)]
        with open(self.log_file, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while b"kroxylicious started" not in self.log_file.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise BenchError(f"Kroxylicious did not start:\n{self.log_file.read_text()[-2000:]}")
            time.sleep(0.1)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
