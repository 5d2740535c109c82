"""`kshim compat` without a broker: planning, the comparison of observations (nested keys, failed
runs, reasons from the reviewed table), failure normalisation, the reports and the CLI wiring."""

from __future__ import annotations

import json

import pytest

from shim.cli import main
from shim.compat.diff import compare
from shim.compat.report import table, to_html, to_json
from shim.compat.runner import normalise_failure
from shim.compat.scenarios import SCENARIOS, plan


def test_plan_filters_by_scenario_client_protocol_and_quick():
    got = [(s.name, c, p) for s, c, p in plan(["static-bounce", "cg-regex"], ["aiokafka", "wire"], ["classic", "consumer"])]
    assert got == [("static-bounce", "aiokafka", "classic"), ("cg-regex", "wire", "consumer")]
    assert {s.name for s, _, _ in plan(None, ["java"], ["consumer"])} == {"cg-join-leave", "cg-static",
                                                                           "classic-to-consumer"}
    assert {s.name for s, _, _ in plan(None, ["librdkafka"], ["classic"], quick=True)} == {
        "static-bounce", "offsets", "txn-offsets"}
    assert "cg-retention" not in {s.name for s, _, _ in plan(None, ["wire"], ["consumer"])}    # opt-in
    assert [s.name for s, _, _ in plan(["cg-retention"], ["wire"], ["consumer"])] == ["cg-retention"]
    with pytest.raises(ValueError, match="no-such"):
        plan(["no-such"], ["java"], ["classic"])


def test_every_scenario_documents_itself():
    for s in SCENARIOS.values():
        assert s.fn.__module__.startswith("shim.compat.scenarios.") and s.clients and s.protocols


def test_compare_flattens_nested_observations_and_attaches_known_reasons(monkeypatch):
    from shim.compat import known_differences
    monkeypatch.setitem(known_differences.KNOWN, ("classic-to-consumer", "*", "consumer", "*"), "reviewed reason")
    a = {"cg-regex [wire, consumer]": {"epochs": [1, 2], "assigned_partitions": 3},
         "classic-to-consumer [java, consumer]": {"failed": "x"},
         "offsets [librdkafka, classic]": {"fetch": {"error": "NONE", "offsets": {0: [5, "m", "NONE"]}}}}
    b = {"cg-regex [wire, consumer]": {"epochs": [2, 3], "assigned_partitions": 3},
         "classic-to-consumer [java, consumer]": {"mixed": {"type": "Consumer"}},
         "offsets [librdkafka, classic]": {"fetch": {"error": "NONE", "offsets": {0: [4, "m", "NONE"]}}}}
    diffs = compare(a, b)
    upgrade = diffs.pop(1)
    assert (upgrade.key, upgrade.a, upgrade.b) == ("outcome", "x", "ok") and upgrade.reason == "reviewed reason"
    assert [(d.run, d.key, d.a, d.b) for d in diffs] == [
        ("cg-regex [wire, consumer]", "epochs", [1, 2], [2, 3]),
        ("offsets [librdkafka, classic]", "fetch.offsets.0", [5, "m", "NONE"], [4, "m", "NONE"])]
    assert diffs[0].reason is None and diffs[1].reason is None
    text = table(["Kafka", "kshim"], diffs)
    assert "fetch.offsets.0" in text and "unexplained" in text
    assert compare(a, a) == [] and table(["A", "B"], []) == "no differences\n"


def test_a_failed_run_is_one_outcome_row():
    ok = {"s [java, classic]": {"x": 1, "y": 2}}
    failed = {"s [java, classic]": {"failed": "ScenarioFailed: timed out waiting for a owns all"}}
    (d,) = compare(ok, failed)
    assert (d.key, d.a, d.b) == ("outcome", "ok", "ScenarioFailed: timed out waiting for a owns all")


def test_failure_text_drops_generated_names():
    e = AssertionError("compat-g-static-bounce-a-1f2e3d-9a8b exited (1) before 1x partitions_assigned\nmore")
    assert normalise_failure(e) == "AssertionError: <name> exited (1) before 1x partitions_assigned"


def test_json_and_html_reports_hold_every_observation():
    a, b = {"r [java, classic]": {"k": 1}}, {"r [java, classic]": {"k": 2}}
    diffs = compare(a, b)
    doc = json.loads(to_json(["A", "B"], ["h:1", "h:2"], [a, b], diffs))
    assert doc["targets"][1]["results"] == b and doc["differences"][0]["key"] == "k"
    page = to_html(["A", "B"], ["h:1", "h:2"], [a, b], diffs)
    assert "<tr class=d><td>r [java, classic]<td>k<td>1<td>2<td>unexplained" in page


def test_cli_lists_scenarios_and_rejects_unknown_ones(capsys):
    assert main(["compat", "--list"]) == 0
    assert "batch-leave" in capsys.readouterr().out
    assert main(["compat", "--bootstrap", "127.0.0.1:1", "--scenarios", "nope"]) == 2
    assert main(["compat"]) == 2
