"""A Docker engine of the project's own for the tests marked `docker`: Debian's dockerd (installed by
scripts/setup --test when root) on build/docker/docker.sock with its data under build/docker, no
default bridge and no iptables rules (containers talk over the user-defined networks testcontainers
and compose create; published ports go through docker-proxy), so stopping it leaves nothing behind
on the machine's network. `why_not()` says in one line why no engine can run here."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from shim.localkafka.home import build_dir

HOME = build_dir() / "docker"
SOCKET = HOME / "docker.sock"
HOST = f"unix://{SOCKET}"
_PROC: subprocess.Popen | None = None     # the dockerd this process started (reaped by stop)


def env() -> dict[str, str]:
    """The environment a Docker client (CLI, docker SDK, testcontainers) needs to use this engine."""
    return {**os.environ, **CLIENT_ENV}


# DOCKER_HOST: this engine; Ryuk (testcontainers' reaper) off: its image cannot be pulled, and the tests
# remove what they start; TC_HOST: containers' published ports are on this host (testcontainers would
# otherwise take the default gateway when it believes it runs inside a container; TC_HOST for
# Python, TESTCONTAINERS_HOST_OVERRIDE for Java); the legacy builder
# (Debian's engine has no buildx)
CLIENT_ENV = {"DOCKER_HOST": HOST, "TESTCONTAINERS_RYUK_DISABLED": "true", "TC_HOST": "127.0.0.1",
              "TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1", "DOCKER_BUILDKIT": "0"}


def dockerd() -> str | None:
    return shutil.which("dockerd") or next((p for p in ("/usr/sbin/dockerd", "/usr/bin/dockerd")
                                            if os.access(p, os.X_OK)), None)


def why_not() -> str | None:
    """None when an engine can run here, else the reason in one line."""
    if os.geteuid() != 0:
        return "Docker tests need root (dockerd); run the suite as root"
    if dockerd() is None:
        return "no dockerd: scripts/setup --test installs Debian's docker.io when root"
    if shutil.which("docker") is None:
        return "no docker client: scripts/setup --test installs Debian's docker.io when root"
    if "overlay" not in Path("/proc/filesystems").read_text():
        return "the kernel has no overlay filesystem for Docker's overlay2 driver"
    return None


def docker(*args: str, check: bool = True, capture: bool = True, timeout: float = 600,
           input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], env=env(), check=check, timeout=timeout, input=input,
                          capture_output=capture)


def running() -> bool:
    if not SOCKET.exists():
        return False
    return docker("version", "--format", "{{.Server.Version}}", check=False, timeout=20).returncode == 0


def start(timeout: float = 30.0) -> float:
    """Start the engine unless it answers already; returns the seconds it took."""
    reason = why_not()
    if reason:
        raise RuntimeError(reason)
    t0 = time.monotonic()
    if running():
        return 0.0
    for sub in ("data", "exec"):
        (HOME / sub).mkdir(parents=True, exist_ok=True)
    SOCKET.unlink(missing_ok=True)
    log = open(HOME / "dockerd.log", "ab")
    global _PROC
    _PROC = subprocess.Popen([dockerd(), "--host", HOST, "--data-root", str(HOME / "data"),
                      "--exec-root", str(HOME / "exec"), "--pidfile", str(HOME / "dockerd.pid"),
                      "--bridge", "none", "--iptables=false", "--ip-masq=false", "--ip", "127.0.0.1",
                      "--storage-driver", "overlay2"],
                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    while time.monotonic() - t0 < timeout:
        if running():
            return time.monotonic() - t0
        time.sleep(0.2)
    raise RuntimeError(f"dockerd did not answer on {SOCKET} within {timeout:.0f} s (see {HOME / 'dockerd.log'})")


def stop(timeout: float = 30.0) -> None:
    """Remove every container and network left, then stop the engine (SIGTERM, then SIGKILL)."""
    if running():
        ids = docker("ps", "-aq", check=False).stdout.split()
        if ids:
            docker("rm", "-f", "-v", *[i.decode() for i in ids], check=False)
        docker("network", "prune", "-f", check=False)
    pidfile = HOME / "dockerd.pid"
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if _PROC is not None and _PROC.pid == pid:
        try:
            _PROC.wait(timeout)
        except subprocess.TimeoutExpired:
            _PROC.kill()
            _PROC.wait()
    else:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.2)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    unmount_leftovers()


def mounts() -> list[str]:
    """The mount points under the engine's folder (dockerd leaves its default network namespace
    mounted at exec/netns/default when it stops)."""
    home = str(HOME.resolve())
    out = []
    for line in Path("/proc/mounts").read_text().splitlines():
        point = line.split()[1].replace("\\040", " ")
        if point == home or point.startswith(home + "/"):
            out.append(point)
    return out


def unmount_leftovers() -> None:
    for point in sorted(mounts(), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def _alive(pid: int) -> bool:
    """A process that has not exited (a zombie has: its parent just did not reap it yet)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def network_leftovers() -> list[str]:
    """What an engine leaves on the host: a docker0, br-* or veth* interface, DOCKER iptables rules, a
    mount under its folder. Empty when clean."""
    out = [f"mount {m}" for m in mounts()]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout \
        if shutil.which("ip") else "".join(f"{n}\n" for n in os.listdir("/sys/class/net"))
    for line in links.splitlines():
        name = line.split(":")[1].strip() if ":" in line else line.strip()
        if name == "docker0" or name.startswith("br-") or name.startswith("veth"):
            out.append(f"interface {name}")
    if shutil.which("iptables"):
        rules = subprocess.run(["iptables", "-S"], capture_output=True, text=True).stdout
        out += [f"iptables {r}" for r in rules.splitlines() if "DOCKER" in r]
    return out
