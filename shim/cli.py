"""The `kshim` command: `kshim run`, `kshim kafka start|stop|status`, `kshim trace show|analyze`, `kshim compat`, `kshim version`."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from . import __version__


def _kafka_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nodes", type=int, choices=(1, 3), default=int(os.environ.get("KSHIM_KAFKA_NODES", "1")),
                   help="1 combined broker+controller, or 3 combined nodes (default 1)")
    p.add_argument("--port", type=int, default=int(os.environ.get("KSHIM_KAFKA_PORT", "19092")),
                   help="client port of node 1; node n uses port+2(n-1), controllers port+1 (default 19092)")
    p.add_argument("--workdir", type=Path, default=None,
                   help="where data, logs and state.json go (default build/run/kafka-<nodes>n-<port>)")
    p.add_argument("--timeout", type=float, default=float(os.environ.get("KSHIM_KAFKA_TIMEOUT", "90")),
                   help="seconds to wait for readiness (default 90)")


def _cluster(args):
    from .localkafka import LocalKafka, install
    version = getattr(args, "version", None)
    return LocalKafka(nodes=args.nodes, base_port=args.port, workdir=args.workdir,
                      overrides=_broker_settings(getattr(args, "set", None) or []),
                      kafka=install(version) if version else None)


def _broker_settings(pairs: list[str]) -> dict[str, str]:
    """`--set num.partitions=4` pairs as broker properties (they win over kshim's defaults)."""
    out = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise SystemExit(f"kshim kafka start: --set expects KEY=VALUE, got {pair!r}: "
                             "write it as e.g. --set num.partitions=4")
        out[key.strip()] = value.strip()
    return out


def _wait_forever(cluster, what: str) -> int:
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    print(f"{what}; press Ctrl-C to stop.", flush=True)
    try:
        while not stop["now"]:
            dead = [n.node_id for n in cluster.nodes if not n.alive()]
            if dead:
                print(f"Kafka node(s) {dead} exited; see {cluster.nodes[0].log_file.parent}", file=sys.stderr)
                return 1
            time.sleep(0.5)
    finally:
        from .runner import say          # (a closed pipe must not skip the stop)
        say("stopping Kafka ...")
        cluster.stop()
        say("stopped.")
    return 0


def cmd_kafka_start(args) -> int:
    cluster = _cluster(args)
    t0 = time.monotonic()
    cluster.start(timeout=args.timeout, fresh=not args.keep_data)
    print(f"Kafka {cluster.kafka.home.name.removeprefix('kafka-')} ready in {time.monotonic() - t0:.1f}s")
    print(f"  bootstrap: {cluster.bootstrap}")
    print(f"  logs:      {cluster.nodes[0].log_file.parent}")
    print(f"  stop with: kshim kafka stop --port {args.port}" + (" --nodes 3" if args.nodes == 3 else ""))
    if args.foreground:
        return _wait_forever(cluster, "Kafka is running")
    for n in cluster.nodes:  # leave the JVMs running when this process exits
        n.proc = None
    return 0


def cmd_kafka_stop(args) -> int:
    from .localkafka import stop_from_state
    state = _cluster(args).state_file
    if not state.exists():
        print(f"no running local Kafka recorded at {state}")
        return 0
    pids = stop_from_state(state)
    print(f"stopped Kafka (pids {pids})" if pids else "Kafka was not running; state cleared")
    return 0


def cmd_kafka_status(args) -> int:
    import json
    from .localkafka import probe_brokers
    state = _cluster(args).state_file
    if not state.exists():
        print("not running")
        return 3
    data = json.loads(state.read_text())
    try:
        brokers = probe_brokers(data["nodes"][0]["port"])
        print(f"running: bootstrap {data['bootstrap']}, brokers {sorted(b[0] for b in brokers)}")
        return 0
    except OSError as e:
        print(f"recorded at {state} but not answering: {e}")
        return 1


def cmd_run(args) -> int:
    from .config import ConfigError, flags_from_args, load
    from .runner import run
    try:
        cfg = load(args.config, flags_from_args(args))
    except ConfigError as e:
        print(f"kshim: configuration: {e}", file=sys.stderr)
        return 2
    return run(cfg)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kshim", description="Kafka wire-compatible broker shim with its own group coordinator.")
    p.add_argument("--version", action="version", version=version_line(),
                   help="print kshim's version and the Kafka version it is pinned to, and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    v = sub.add_parser("version", help="print kshim's version and the pinned Kafka version")
    v.set_defaults(func=lambda a: (print(version_line()), 0)[1])

    r = sub.add_parser("run", help="the main job: kshim in front of a Kafka cluster (default: a local real Kafka)",
                       description="Settings come from defaults < --config file < KSHIM_* environment < flags; "
                                   "see docs/kshim-run.md.")
    r.add_argument("--config", type=Path, default=None, metavar="FILE",
                   help="a TOML or YAML file of settings (keys as the flags, with _; docs/kshim-run.md)")
    from .config import add_flags
    add_flags(r)
    r.add_argument("--trace", dest="trace_dir", default=None, metavar="DIR",
                   help="write wire traces to DIR (same as --trace-dir; docs/kshim-trace.md)")
    r.set_defaults(func=cmd_run)

    from .trace.show import add_parser as add_trace_parser
    add_trace_parser(sub)
    from .trace.analyze.command import add_parser as add_analyze_parser  # no pyspark import until it runs
    add_analyze_parser(sub.choices["trace"])
    from .trace.capture.command import add_parser as add_import_parser
    from .offsets_import import add_args as add_records_args     # the coordinator's records: a program-layer reader
    add_records_args(add_import_parser(sub.choices["trace"]))

    from .compat.command import add_parser as add_compat_parser
    add_compat_parser(sub)
    from .groups_command import add_parser as add_groups_parser
    add_groups_parser(sub)

    k = sub.add_parser("kafka", help="start, stop or query the local real Kafka")
    ksub = k.add_subparsers(dest="kafka_command", metavar="ACTION", required=True)
    ks = ksub.add_parser("start", help="format and start Kafka, wait until ready")
    _kafka_args(ks)
    ks.add_argument("--version", default=None, metavar="X",
                    help="an Apache Kafka release other than the pin, 3.9.x to the pin (installed by "
                         "scripts/setup --kafka-version X)")
    ks.add_argument("--foreground", action="store_true", help="stay attached; Ctrl-C stops Kafka")
    ks.add_argument("--keep-data", action="store_true", help="reuse existing data instead of formatting fresh")
    ks.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="a broker property for every node, e.g. --set num.partitions=4 (repeatable)")
    ks.set_defaults(func=cmd_kafka_start)
    kt = ksub.add_parser("stop", help="stop a Kafka started by `kshim kafka start`")
    _kafka_args(kt)
    kt.set_defaults(func=cmd_kafka_stop)
    kq = ksub.add_parser("status", help="is the local Kafka answering?")
    _kafka_args(kq)
    kq.set_defaults(func=cmd_kafka_status)
    return p


def _kafka_pin() -> str:
    from .localkafka.home import KAFKA_VERSION
    return KAFKA_VERSION


def version_line() -> str:
    """`kshim 0.1.0 (Kafka pin 4.4.0)`; the wire schemas' version too when it differs from the pin."""
    line = f"kshim {__version__} (Kafka pin {_kafka_pin()}"
    try:
        from kcodec.api import KAFKA_VERSION as schemas
    except ImportError:
        schemas = _kafka_pin()
    return line + (")" if schemas == _kafka_pin() else f"; wire schemas from Kafka {schemas})")


def main(argv: list[str] | None = None) -> int:
    from .localkafka import BrokerNotReady, EnvironmentProblem
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except (EnvironmentProblem, BrokerNotReady) as e:
        print(f"kshim: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
