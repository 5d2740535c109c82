"""tcpdump (the Debian package scripts/setup --test installs) capturing loopback traffic for a test."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path


def available() -> bool:
    return shutil.which("tcpdump") is not None


def settle(path: Path, quiet: float = 1.0, timeout: float = 20.0) -> None:
    """Waits until `path` (and the files tcpdump -C rotates it into) has not grown for `quiet` seconds."""
    end, last, since = time.monotonic() + timeout, -1, time.monotonic()
    while time.monotonic() < end:
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.1)


class Capture:
    """`tcpdump -i IFACE -w FILE FILTER`, packets written as they come (-U); stop() waits for the file."""

    def __init__(self, out: Path, ports: list[int], iface: str = "lo", snaplen: int = 0, extra: list[str] = (),
                 log: Path | None = None):
        self.out = Path(out)
        filt = " or ".join(f"tcp port {p}" for p in ports)
        # -B: a 64 MB kernel buffer (KiB), so a busy machine does not drop packets before tcpdump reads them
        self.cmd = ["tcpdump", "-i", iface, "-U", "-n", "-Z", "root", "-B", "65536", "-s", str(snaplen), "-w", str(self.out),
                    *extra, filt]
        self.proc: subprocess.Popen | None = None
        self.log = log or self.out.with_suffix(".tcpdump.log")

    def start(self, timeout: float = 10.0) -> "Capture":
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log, "w")
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT)
        end = time.monotonic() + timeout
        while time.monotonic() < end:    # "listening on lo ..." once the capture is armed
            if self.proc.poll() is not None:
                raise RuntimeError(f"tcpdump exited {self.proc.returncode}: {self.log.read_text()[-500:]}")
            if "listening on" in self.log.read_text():
                return self
            time.sleep(0.05)
        raise RuntimeError(f"tcpdump did not start in {timeout} s: {self.log.read_text()[-500:]}")

    def dropped(self) -> int:
        """Packets the kernel dropped (tcpdump's own count, once stopped)."""
        import re
        m = re.search(r"(\d+) packets dropped by kernel", self.log.read_text())
        return int(m.group(1)) if m else 0

    def stop(self) -> Path:
        if self.proc is not None and self.proc.poll() is None:
            settle(self.out)            # tcpdump lags on a busy machine: SIGINT drops what it has not read
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.out

    def __enter__(self) -> "Capture":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
