"""A large `kshim compat --wire` run: the real broker versus kshim in front of it (both started here,
or given), then the same seeds broker versus broker (the control: differences there are the tester's
noise, not kshim's). Usage: scripts/wire-diff [--seeds 0-1999] [--kafka H:P --kshim H:P]
[--minimize DIR] [--concurrency N] [--group-max-size N] [--kafka-version X]. Writes
build/wire-diff/report.json. --kafka-version runs another supported release than the pin (3.9.x to 4.4.x).
--group-max-size sets group.max.size on the broker started here and on kshim (the scenarios' groups
of up to four members, and classic rejoins with new member ids, then reach the limit)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from shim.localkafka import LocalKafka, install
from shim.localkafka.home import build_dir
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block


def _wire(a: str, b: str | None, seeds: str, concurrency: int, out: Path, extra: list[str]) -> int:
    cmd = [sys.executable, "-m", "shim.cli", "compat", "--wire", "--bootstrap", a, "--seeds", seeds,
           "--concurrency", str(concurrency), "--json", str(out), *extra]
    cmd += ["--against", b] if b else ["--control"]
    return subprocess.call(cmd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0-1999")
    ap.add_argument("--kafka", default=None)
    ap.add_argument("--kshim", default=None)
    ap.add_argument("--concurrency", type=int, default=10)
    ap.add_argument("--minimize", type=Path, default=None)
    ap.add_argument("--no-control", action="store_true")
    ap.add_argument("--group-max-size", type=int, default=None)
    ap.add_argument("--kafka-version", default=None,
                    help="the release of the Kafka started here (installed by scripts/setup --kafka-version X)")
    args = ap.parse_args()
    if args.group_max_size and (args.kafka or args.kshim):
        ap.error("--group-max-size configures the broker and kshim started here: not with --kafka/--kshim")
    broker_overrides = {"group.max.size": str(args.group_max_size)} if args.group_max_size else None
    kshim_extra = ["--group-max-size", str(args.group_max_size)] if args.group_max_size else None
    import signal
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    out = build_dir() / "wire-diff"
    out.mkdir(parents=True, exist_ok=True)
    kafka = kshim = None
    with tempfile.TemporaryDirectory() as d:
        try:
            if not args.kafka:
                kafka = LocalKafka(nodes=1, base_port=free_port_block(2, start=45100), workdir=d,
                                   overrides=broker_overrides,
                                   kafka=install(args.kafka_version) if args.kafka_version else None).start()
            broker = args.kafka or kafka.bootstrap
            if not args.kshim:
                kshim = KshimProcess(broker, free_port_block(5, start=46100), Path(d) / "kshim.log",
                                     extra=kshim_extra).start()
            extra = ["--minimize", str(args.minimize)] if args.minimize else []
            print(f"== Kafka ({broker}) versus kshim", flush=True)
            rc = _wire(broker, args.kshim or kshim.bootstrap, args.seeds, args.concurrency, out / "kshim.json", extra)
            rc_control = 0
            if not args.no_control:
                print(f"== control: Kafka versus Kafka ({broker})", flush=True)
                rc_control = _wire(broker, None, args.seeds, args.concurrency, out / "control.json", [])
        finally:
            if kshim:
                kshim.stop()
            if kafka:
                kafka.stop()
    report = {name: json.loads((out / f"{name}.json").read_text()) for name in ("kshim", "control")
              if (out / f"{name}.json").exists()}
    (out / "report.json").write_text(json.dumps(report, indent=1))
    print(f"wrote {out / 'report.json'}")
    return rc or rc_control


if __name__ == "__main__":
    sys.exit(main())
