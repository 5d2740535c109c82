"""`kshim groups export` and `kshim groups import`: moving groups' committed offsets between kshim
and the broker it fronts (shim/state/handback.py; adoption: shim/groupservice/adoption.py)."""

from __future__ import annotations

import asyncio
import sys

from kcodec.generated.list_groups import ListGroupsRequest
from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
from kcodec.protocol import ApiKey, error_name

from .config import Config, ConfigError
from .kafkaclient.client import UpstreamClient
from .state import handback

LIST_GROUPS, OFFSET_FETCH = ApiKey.LIST_GROUPS, ApiKey.OFFSET_FETCH


def add_parser(sub) -> None:
    g = sub.add_parser("groups", help="move groups' committed offsets between kshim and the broker")
    gsub = g.add_subparsers(dest="groups_command", metavar="ACTION", required=True)
    e = gsub.add_parser("export", help="write the offsets of kshim's Empty groups back to the broker",
                        description="Reads kshim's state topic and commits each Empty group's offsets at the "
                                    "broker's group coordinator, so the application can go back to the broker.")
    e.add_argument("--upstream", required=True, metavar="HOST:PORT[,...]",
                   help="bootstrap servers of the Kafka cluster kshim fronts")
    e.add_argument("--state-topic", default=Config.state_topic, metavar="TOPIC",
                   help=f"kshim's state topic (default {Config.state_topic})")
    e.add_argument("--group", action="append", metavar="REGEX",
                   help="only groups whose id fully matches REGEX (repeatable; default every group)")
    e.add_argument("--dry-run", action="store_true", help="list what would be written, write nothing")
    e.set_defaults(func=cmd_export)
    i = gsub.add_parser("import", help="adopt the broker's groups into kshim ahead of their first use",
                        description="For each matching group the broker holds, asks a running kshim for its "
                                    "offsets, which makes kshim adopt them (docs/kshim-groups.md).")
    i.add_argument("--upstream", required=True, metavar="HOST:PORT[,...]",
                   help="bootstrap servers of the Kafka cluster kshim fronts (where the groups are listed)")
    i.add_argument("--kshim", required=True, metavar="HOST:PORT", help="bootstrap address of the running kshim")
    i.add_argument("--group", action="append", metavar="REGEX",
                   help="only groups whose id fully matches REGEX (repeatable; default every classic/consumer group)")
    i.set_defaults(func=cmd_import)


def _config(args) -> Config:
    cfg = Config(upstream=args.upstream, state_topic=getattr(args, "state_topic", Config.state_topic))
    cfg.upstream_addresses()               # a malformed address fails here, with the fix in the message
    return cfg


def cmd_export(args) -> int:
    try:
        cfg = _config(args)
    except ConfigError as e:
        print(f"kshim groups export: {e}", file=sys.stderr)
        return 2
    return asyncio.run(_export(cfg, args))


async def _export(cfg: Config, args) -> int:
    match = handback.matcher(args.group)
    try:
        c = await handback.load_coordinator(cfg)
    except (OSError, ConnectionError, TimeoutError) as e:
        print(f"kshim groups export: cannot read kshim's state: {e}", file=sys.stderr)
        return 1
    groups = handback.empty_groups(c, match)
    live = handback.live_groups(c, match)
    print(f"{len(groups)} Empty groups with {sum(len(o) for o in groups.values())} offsets to export"
          + (f"; {len(live)} groups with members left out: {', '.join(live)}" if live else ""))
    if args.dry_run:
        for gid, offsets in sorted(groups.items()):
            print(f"  {gid}: " + ", ".join(f"{r.topic}-{r.partition}@{r.offset}" for r in offsets))
        return 0
    summary = await handback.export(cfg, groups)
    print(f"exported {summary.offsets} offsets of {summary.groups} groups"
          + (f"; refused: {len(summary.refused)} groups" if summary.refused else ""))
    return 1 if summary.refused else 0


def cmd_import(args) -> int:
    try:
        cfg = _config(args)
        kshim = Config(upstream=args.kshim).upstream_addresses()[0]
    except ConfigError as e:
        print(f"kshim groups import: {e}", file=sys.stderr)
        return 2
    return asyncio.run(_import(cfg, kshim, handback.matcher(args.group)))


async def _import(cfg: Config, kshim: tuple[str, int], match) -> int:
    """The broker's classic and consumer groups (ListGroups on every broker) matching; an OffsetFetch
    of each through kshim makes kshim adopt it (shim/groupservice/adoption.py) and says what it holds."""
    client = await UpstreamClient.connect(cfg, *cfg.upstream_addresses()[0])
    try:
        brokers, _ = await client.metadata()
    finally:
        client.close()
    names: set[str] = set()
    for b in brokers:
        conn = await UpstreamClient.connect(cfg, b.host, b.port)
        try:
            v = conn.version_for(LIST_GROUPS, 5)
            resp = await conn.request(LIST_GROUPS, v, ListGroupsRequest(
                states_filter=[], types_filter=["classic", "consumer"] if v >= 5 else None))
            names.update(g.group_id for g in resp.groups if match(g.group_id))
        finally:
            conn.close()
    through = await UpstreamClient.connect(Config(), *kshim)
    failed = 0
    try:
        for i, gid in enumerate(sorted(names), 1):
            v = through.version_for(OFFSET_FETCH, 9)
            resp = await through.request(OFFSET_FETCH, v, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
                group_id=gid, member_id=None, member_epoch=-1, topics=None)], require_stable=False), timeout=60)
            g = resp.groups[0]
            held = sum(1 for t in g.topics for p in t.partitions if p.committed_offset >= 0)
            failed += bool(g.error_code)
            print(f"[{i}/{len(names)}] {gid}: " + (error_name(g.error_code) if g.error_code else
                                                   f"{held} offsets held by kshim"))
    finally:
        through.close()
    print(f"imported {len(names) - failed} of {len(names)} groups")
    return 1 if failed else 0
