"""`kshim trace import --consumer-offsets` on a real Kafka 4.4.0: the group coordinator's own records of
the run every capture test reads (broker_capture.py: Java cooperative-sticky consumers, one stalls its
poll loop, a static one is bounced, one is SIGKILLed; then a KIP-848 group of librdkafka consumers
joins and leaves), analysed from the records alone and set beside the consumers' callback logs and the
capture of the same run: the same generations and epochs, owners and windows within 100 ms, the
causes the records can show (and none they cannot)."""

from __future__ import annotations

import pytest

from shim.cli import main as kshim_main
from shim.config import Config
from shim.offsets_import import import_from_cluster
from shim.trace.capture.command import run_import
from shim.trace.show import read_trace
from testsuite.trace.capture_compare import analysis
from testsuite.trace.gap_compare import JUDGED_STARTS, compare_tables, print_comparison

pytestmark = [pytest.mark.kafka, pytest.mark.timing]
TOLERANCE_MS = 100      # wall clock of one host (the broker's record stamps, the consumers' callback logs)


def _records(c, kafka, name: str = "records", **kw):
    out = c["dir"] / name
    if not out.exists():
        c[f"summary-{name}"] = import_from_cluster(Config(upstream=kafka.bootstrap), out,
                                                   [c["group"], c["cg_group"]], **kw)
    return out, c[f"summary-{name}"]


def _capture(c):
    d = c["dir"] / "clean"
    if not d.exists():
        run_import([c["pcap"]], d, {c["port"]})
    return d


def test_classic_group_from_the_records_agrees_with_the_consumers_logs(broker_capture, kafka):
    c = broker_capture
    out, s = _records(c, kafka)
    read = s["consumer_offsets"]
    assert not read["skipped"] and read["by_type"].get("GroupMetadata", 0) >= 4, read
    assert all(p["gaps"] == 0 for p in read["partitions"].values()), read        # nothing compacted yet
    tables = analysis(list(read_trace(out)), c["group"])
    cmp = compare_tables(tables, c["group"], c["logs"], c["marks"], tolerance=TOLERANCE_MS)
    print_comparison("the coordinator's records", cmp, None, c["marks"])
    print("\n".join(cmp["causes"]))
    judged = [r for r in cmp["rows"] if r["log"] is not None and "setup" not in r["note"]]
    assert judged, cmp["rows"]
    for r in judged:
        assert r["analysis"] is not None, r                                 # every assignment is in the records
        assert "previous owner differs" not in r["note"], r
        assert abs(r["d_to"]) <= TOLERANCE_MS, r                            # the next owner's assignment
        unseen = r["analysis"][2] is None                                  # the records cannot say when it stopped
        if not unseen and r["log_kind"] in JUDGED_STARTS:
            assert abs(r["d_from"]) <= TOLERANCE_MS, r                      # a cooperative revocation
    unseen = [r for r in judged if r["analysis"][2] is None]              # its length unknown, never 0
    assert {r["log_kind"] for r in unseen} == {"poll_timeout", "killed", "closed"}, unseen
    assert {r["a_kind"] for r in unseen} == {"removed", "static_replaced"}, unseen
    only_analysis = [r for r in cmp["rows"] if r["log"] is None]
    assert all(r["analysis"][2] is None or r["ok"] for r in only_analysis), only_analysis


def test_records_generations_and_causes_match_the_capture(broker_capture, kafka):
    """Every generation the capture shows completed is in the records, and no other (one replaced before
    its leader's SyncGroup has none); the
    static bounce is a replacement without a rebalance; the stalled and the killed member are removed
    from the generation that follows (the records cannot say why: `removed`, inferred)."""
    c = broker_capture
    out, _ = _records(c, kafka)
    recs = list(read_trace(out))
    mine = analysis(recs, c["group"])
    theirs = analysis(list(read_trace(_capture(c))), c["group"])
    print("records:", [(r["generation"], r["generation_wall_ms"], r["members"]) for r in mine["rebalances"]])
    print("capture:", [(r["generation"], r["generation_wall_ms"], r["members"]) for r in theirs["rebalances"]])
    # the group emptied by the last leaves (a generation of no member): the capture may end before it
    # or show it as a round still open, depending on when the last LeaveGroup came
    emptied = [r for r in mine["rebalances"] if r["members"] == 0]
    full = [r for r in mine["rebalances"] if r["members"]]
    assert [r["generation"] for r in emptied] in ([], [full[-1]["generation"] + 1]), emptied
    gens = [r["generation"] for r in full]
    on_wire = {r["generation"]: r for r in theirs["rebalances"] if r["generation"] is not None}
    assert set(gens) <= set(on_wire) and gens == sorted(gens), (gens, on_wire)
    # a generation replaced before its leader's SyncGroup completed it (a member joined meanwhile) has no
    # record: the capture shows no SyncGroup answered without error for it
    unrecorded = sorted(set(on_wire) - set(gens) - {r["generation"] for r in emptied})
    assert all(on_wire[g]["last_sync_wall_ms"] is None for g in unrecorded), [on_wire[g] for g in unrecorded]
    formed = {r["generation"]: r["generation_wall_ms"] for r in mine["rebalances"]}
    answered = theirs["answered"]      # the generation's first JoinGroup answer on the wire
    late = {g: formed[g] - answered[g] for g in formed if g in answered}
    print("record written after the generation's first JoinGroup answer (ms):", late)
    assert all(0 <= d <= 30_000 for d in late.values()), late   # written at the leader's SyncGroup, after it
    causes = [x for x in mine["causes"] if x["group"] == c["group"]]
    assert all(x["source"] == "records" for x in causes)
    static = [x for x in causes if x["kind"] == "static_replaced"]
    assert [x["instance"] for x in static] == [f"{c['group']}-static-m2"], static
    static_at = static[0]["wall_ms"]
    assert not [r for r in mine["rebalances"] if abs(r["generation_wall_ms"] - static_at) < 2000], mine["rebalances"]
    names = {e["member"]: inc["name"] for inc in c["logs"] for e in inc["events"] if e.get("member")}
    removed = {names.get(x["member"]) for x in causes if x["kind"] == "removed"}
    stalled = next(m["member"] for m in c["marks"] if m["step"] == "poll_loop_blocked")
    killed = next(m["member"] for m in c["marks"] if m["step"] == "killed")
    assert {stalled, killed} <= removed, (removed, stalled, killed)
    assert all("records do not say" in (x["reason"] or "") for x in causes if x["kind"] == "removed")


def test_kip848_group_from_the_records_matches_the_capture(broker_capture, kafka):
    """The KIP-848 group: the group epochs the capture shows, each with the join or leave the records
    show as its inferred cause, and the partition owners of the capture's heartbeats within 100 ms
    (the coordinator writes a member's assignment when it answers the heartbeat that carries it)."""
    c = broker_capture
    out, _ = _records(c, kafka)
    recs = list(read_trace(out))
    epochs = [e["body"] for e in recs if e.get("event") == "group_epoch" and e["group"] == c["cg_group"]]
    capture = [e["body"] for e in read_trace(_capture(c)) if e.get("event") == "group_epoch"
               and e.get("group") == c["cg_group"]]
    assert [e["epoch"] for e in epochs] == [e["epoch"] for e in capture], (epochs, capture)
    assert all(e["reason"].startswith("inferred: member ") for e in epochs), epochs
    mine = analysis(recs, c["cg_group"])["partition_owners"]
    theirs = analysis(list(read_trace(_capture(c))), c["cg_group"])["partition_owners"]
    key = lambda s: (s["topic"], s["partition"], s["from_wall_ms"])  # noqa: E731
    mine, theirs = sorted(mine, key=key), sorted(theirs, key=key)
    print("records:", [(s["partition"], s["member"][:6], s["from_wall_ms"], s["to_wall_ms"], s["end_kind"]) for s in mine])
    print("capture:", [(s["partition"], s["member"][:6], s["from_wall_ms"], s["to_wall_ms"], s["end_kind"]) for s in theirs])
    assert [(s["partition"], s["member"]) for s in mine] == [(s["partition"], s["member"]) for s in theirs]
    for a, b in zip(mine, theirs):
        assert abs(a["from_wall_ms"] - b["from_wall_ms"]) <= TOLERANCE_MS, (a, b)
        if not a["end_unseen"] and b["to_wall_ms"] is not None:
            assert abs(a["to_wall_ms"] - b["to_wall_ms"]) <= TOLERANCE_MS, (a, b)


def test_since_the_middle_the_records_invent_nothing(broker_capture, kafka, capsys):
    """`--since` in the middle of the run (the CLI, as a person types it): the first record after it is
    the state in force, not a rebalance; the generations formed after are the full read's."""
    c = broker_capture
    full, _ = _records(c, kafka)
    at = next(m["wall_ms"] for i, m in enumerate(c["marks"])
              if m["step"] == "stable" and c["marks"][i + 1]["step"] == "static_member_closed")
    out = c["dir"] / "records-since"
    assert kshim_main(["trace", "import", "--consumer-offsets", kafka.bootstrap, "--group", c["group"],
                       "--since", str(at), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "not read" in text and "state in force" in text, text
    late = analysis(list(read_trace(out)), c["group"])["rebalances"]
    whole = analysis(list(read_trace(full)), c["group"])["rebalances"]
    assert [r["generation"] for r in late] == [r["generation"] for r in whole if r["generation_wall_ms"] >= at]
    first = next(e for e in read_trace(out) if e.get("type") == "event")
    assert first["event"] == "generation" and first["body"]["in_force"], first


def test_analyze_reads_a_records_trace(broker_capture, kafka, spark, tmp_path):
    """`kshim trace analyze` (Spark) on the records' trace: both groups' rebalances, per-partition tables
    and the report, with the records' word ("records") on every cause."""
    from shim.trace.analyze.pipeline import analyze
    from testsuite.trace.gap_compare import read_tables
    c = broker_capture
    out, _ = _records(c, kafka)
    summary = analyze(spark, out, tmp_path / "report", master="local[2]")
    by_group = {g["group"]: g for g in summary["groups"]}
    assert by_group[c["group"]]["rebalances"] >= 4, summary["groups"]
    tables = read_tables(tmp_path / "report")
    assert {r["group"] for r in tables["partition_owners"]} >= {c["group"], c["cg_group"]}
    assert tables["causes"] and all(r["source"] == "records" for r in tables["causes"])
    assert (tmp_path / "report" / "report.html").stat().st_size > 10_000


def test_records_with_the_broker_log_name_every_cause(broker_capture, kafka):
    """The records with the broker's own server.log of the same time (both stamped by the coordinator's
    clock): each rebalance's start and reason are the coordinator's, and the scenario's steps (a poll
    timeout, a static bounce without rebalance, a kill) are named as the consumers' logs say; the
    assignments are still the records' (gap ends within 100 ms of the callbacks)."""
    c = broker_capture
    out, s = _records(c, kafka, "records-with-log", broker_logs=[c["broker_log"]])
    assert s["broker_log"]["events_used"] > 0, s["broker_log"]
    tables = analysis(list(read_trace(out)), c["group"])
    cmp = compare_tables(tables, c["group"], c["logs"], c["marks"], tolerance=TOLERANCE_MS)
    print_comparison("the coordinator's records + its log", cmp, None, c["marks"])
    print("\n".join(cmp["causes"]))
    print("\n".join(cmp["events"]))
    assert all(line.endswith("ok") for line in cmp["events"]), cmp["events"]
    for r in cmp["rows"]:
        if r["log"] is not None and "setup" not in r["note"]:
            assert r["analysis"] is not None and abs(r["d_to"]) <= TOLERANCE_MS, r
    rounds = [r for r in tables["rebalances"] if r["generation"] is not None]
    assert all(r["reason"] and not r["reason"].startswith("inferred") for r in rounds[1:]), rounds
