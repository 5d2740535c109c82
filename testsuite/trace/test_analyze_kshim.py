"""The must-show of the trace analysis: a real static bounce and its dynamic equivalent, with Kafka's
Java consumers through a traced kshim (`kshim run --trace DIR`), analysed by the Spark pipeline.

Both groups: 2 members on 4 partitions, session timeout 10 s; member 0 is bounced. Static: closed
(a static member sends no LeaveGroup) and restarted with the same group.instance.id -> the report
must show 0 rebalances for the bounce. Dynamic: killed (SIGKILL) and restarted -> the new member's
join starts one rebalance, which completes when the dead member's session expires: 1 rebalance.
The report's generation members and assignments must equal what DescribeGroups showed before and
after each bounce (member ids, instance ids, partitions)."""

from __future__ import annotations

import time

import pytest

from kcodec.generated.describe_groups import DescribeGroupsRequest
from shim.compat.pymembers import create_topic
from shim.trace.analyze.assignment import decode_assignment
from shim.trace.analyze.pipeline import analyze
from testsuite.conftest import RUN_DIR, _SPREAD
from testsuite.groups.scenarios import SESSION_MS, _balanced, _wait
from shim.compat.javaclient import JavaTools
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
from shim.compat.wire import Wire

pytestmark = pytest.mark.timing   # compares wall-clock measurements: runs alone (scripts/test)


def describe(bootstrap: str, group: str) -> dict:
    """DescribeGroups v5 through kshim: state and member -> (instance id, assigned partitions)."""
    with Wire(bootstrap) as w:
        w.send(15, 5, DescribeGroupsRequest(groups=[group]))
        _, resp = w.read_response(15, 5)
    g = resp.groups[0]
    assert g.error_code == 0
    return {"at": int(time.time() * 1000), "state": g.group_state,
            "members": {m.member_id: (m.group_instance_id, decode_assignment(bytes(m.member_assignment)))
                        for m in g.members}}


def bounce(tools: JavaTools, names, static: bool) -> dict:
    topic, group = names.topic(), names.group()
    create_topic(tools.bootstrap, topic, partitions=4)
    ids = [f"{group}-{i}" if static else None for i in range(2)]
    members = [tools.verifiable_consumer(topic, group, instance_id=ids[i], session_timeout_ms=SESSION_MS,
                                         name=f"{group}-{i}") for i in range(2)]
    _wait(lambda: _balanced(members, 4), 90, "a balanced group")
    time.sleep(2)
    before = describe(tools.bootstrap, group)
    t_bounce = int(time.time() * 1000)
    if static:
        members[0].stop()
    else:
        members[0].kill()
    again = tools.verifiable_consumer(topic, group, instance_id=ids[0], session_timeout_ms=SESSION_MS,
                                      name=f"{group}-0-again")
    _wait(lambda: _balanced([again, members[1]], 4), 90, "the restarted member assigned")
    time.sleep(4)      # longer than a heartbeat interval: a late rebalance would have started
    after = describe(tools.bootstrap, group)
    for m in (again, members[1]):
        m.stop()
    return {"group": group, "topic": topic, "t_bounce": t_bounce, "before": before, "after": after}


def report_members_at(tables: dict, group: str, at: int) -> tuple[set, dict]:
    """(generations, member -> (instance, partitions)) of the report's member rows in force at `at`."""
    rows = [m for m in tables["generation_members"] if m["group"] == group and m["from_wall_ms"] <= at
            and (m["to_wall_ms"] is None or at < m["to_wall_ms"])]
    return {m["generation"] for m in rows}, {m["member"]: (m["instance"], m["assignment"]) for m in rows}


def test_static_bounce_analysed_zero_rebalances_dynamic_one(kafka, kafka_install, names, tmp_path, spark):
    trace_dir = tmp_path / "trace"
    port = free_port_block(5, start=33100 + _SPREAD)
    shim = KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"analyze-{names.group()}.log",
                        ["--trace", str(trace_dir)]).start()
    tools = JavaTools(kafka_install, shim.bootstrap, tmp_path / "java")
    try:
        static = bounce(tools, names, static=True)
        dynamic = bounce(tools, names, static=False)
    finally:
        tools.stop_all()
        assert shim.stop() == 0          # SIGTERM: the tracer closes its file

    out = tmp_path / "report"
    summary = analyze(spark, trace_dir, out, png=False, master="local[2]")
    import pyarrow.parquet as pq
    tables = {t: pq.read_table(out / f"{t}.parquet").to_pylist()
              for t in ("rebalances", "generation_members", "changes")}
    by_group = {g["group"]: g for g in summary["groups"]}

    for run, bounces in ((static, 0), (dynamic, 1)):
        g = run["group"]
        rounds = [r for r in tables["rebalances"] if r["group"] == g and r["generation"] is not None]
        # the bounce: from stopping member 0 to the DescribeGroups after it (later, the members are closed)
        during = [r for r in rounds if run["t_bounce"] <= r["start_wall_ms"] < run["after"]["at"]]
        assert len(during) == bounces, (g, during)
        assert by_group[g]["rebalances"] == len(rounds)
        # the report's members at the two DescribeGroups moments are exactly what DescribeGroups showed
        for snap in ("before", "after"):
            gens, members = report_members_at(tables, g, run[snap]["at"])
            assert run[snap]["state"] == "Stable"
            assert len(gens) == 1, (g, snap, gens)
            assert members == {m: (inst, parts) for m, (inst, parts) in run[snap]["members"].items()}, (g, snap)
            run[snap]["generation"] = gens.pop()
        assert run["after"]["generation"] == run["before"]["generation"] + bounces

    # static: a new member id for instance 0 in the same generation, the coordinator's static rejoin
    before, after = static["before"]["members"], static["after"]["members"]
    assert {v[0] for v in before.values()} == {v[0] for v in after.values()} == {f"{static['group']}-0",
                                                                                 f"{static['group']}-1"}
    assert len(set(before) & set(after)) == 1                       # member 1 kept its id, member 0 did not
    kinds = [c["kind"] for c in tables["changes"]
             if c["group"] == static["group"] and static["t_bounce"] <= c["wall_ms"] < static["after"]["at"]]
    assert "static_replaced" in kinds and "static_rejoin" in kinds
    # dynamic: the one rebalance lists the restarted member as joined and the killed one as gone at
    # its session timeout
    (r,) = [r for r in tables["rebalances"] if r["group"] == dynamic["group"]
            and dynamic["t_bounce"] <= r["start_wall_ms"] < dynamic["after"]["at"]]
    assert len(r["joined"]) == 1 and len(r["left"]) == 1 and "session timeout" in r["left"][0], r
    assert r["join_to_sync_ms"] > 0
