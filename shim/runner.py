"""`kshim run`: the proxy in front of an upstream cluster (or of a local real Kafka it starts), and
`build`: where the program is wired together."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
import time

from .config import Config, ConfigError

log = logging.getLogger("kshim")


def setup_logging(level: str, fmt: str = "text") -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if fmt == "json":   # --log-format json (shim/logformat.py)
        from .logformat import JsonFormatter
        for handler in logging.getLogger().handlers:
            handler.setFormatter(JsonFormatter())


def new_event_loop(kind: str) -> asyncio.AbstractEventLoop:
    if kind in ("auto", "uvloop"):
        try:
            import uvloop
            return uvloop.new_event_loop()
        except ImportError:
            if kind == "uvloop":
                raise SystemExit("kshim: --loop uvloop: the uvloop package is not installed (a default "
                                 "dependency where it has a build): pip install uvloop, or use --loop auto")
    return asyncio.new_event_loop()


def build(cfg: Config):
    """The program wired together (the one place): the proxy, with the tracer, metrics and fault
    rules it reports to, kshim's group service plugged into its routing table, the admin endpoint."""
    from .metrics import Metrics
    from .proxy.faults import FaultInjector
    from .proxy.server import Proxy
    from .trace import open_tracer
    metrics = Metrics() if cfg.admin_port else None      # counted only when it can be scraped
    proxy = Proxy(cfg, tracer=open_tracer(cfg), metrics=metrics, faults=FaultInjector(cfg.faults, metrics))
    if cfg.group_coordinator == "kshim":
        from .groupservice.service import GroupService
        proxy.groups = GroupService(proxy, cfg.coordinator_config())
        proxy.groups.install()
    if cfg.admin_port:
        from .admin_http import AdminServer
        proxy.admin = AdminServer(proxy, cfg.admin_port)
    return proxy


async def serve(cfg: Config, ready: asyncio.Event | None = None, stop: asyncio.Event | None = None) -> None:
    if cfg.group_coordinator == "kshim":   # the broker's group settings for those not given
        from .groupservice.configs import adopt_broker_settings
        await adopt_broker_settings(cfg)
    proxy = build(cfg)
    await proxy.start()
    # What start-up made (modules, codec classes, the replayed group state) lives as long as the
    # process: out of the collector's sight, so its full collections no longer walk it.
    gc.collect()
    gc.freeze()
    print(proxy.banner(), flush=True)
    if ready is not None:
        ready.set()
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        await stop.wait()
    finally:
        await proxy.stop()


def run(cfg: Config) -> int:
    setup_logging(cfg.log_level, cfg.log_format)
    cluster = None
    if not cfg.upstream:
        from .localkafka import LocalKafka
        cluster = LocalKafka(nodes=cfg.local_kafka_nodes, base_port=cfg.local_kafka_port)
        t0 = time.monotonic()
        cluster.start()
        print(f"Apache Kafka {cluster.kafka.home.name.removeprefix('kafka-')} ready in "
              f"{time.monotonic() - t0:.1f}s at {cluster.bootstrap} (logs in {cluster.nodes[0].log_file.parent})",
              flush=True)
        cfg.upstream = cluster.bootstrap
    loop = new_event_loop(cfg.loop)
    try:
        loop.run_until_complete(serve(cfg))
        say("kshim stopped.")
    except BrokenPipeError:
        _output_gone()        # the terminal or pipe closed (`scripts/up | tee`: Ctrl-C stopped tee too)
    except ConnectionError as e:
        say(f"kshim: {e}", err=True)
        return 2
    except ConfigError as e:
        say(f"kshim: configuration: {e}", err=True)
        return 2
    except OSError as e:
        say(f"kshim: cannot listen on {cfg.listen_host}:{cfg.listen_port} or a broker port ({e}); "
             "choose others with --listen-port / --broker-port-base", err=True)
        return 2
    finally:
        loop.close()
        if cluster is not None:
            say("stopping the local Kafka ...")
            cluster.stop()
    return 0


def say(text: str, err: bool = False) -> None:
    """A status line; a closed output never skips the shutdown (the local Kafka's stop comes after)."""
    try:
        print(text, file=sys.stderr if err else sys.stdout, flush=True)
    except (BrokenPipeError, ValueError):
        _output_gone()


def _output_gone() -> None:
    """stdout and stderr to /dev/null: the interpreter's own last flush must not fail either."""
    import os
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass
