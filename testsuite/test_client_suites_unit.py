"""scripts/client-suites' reading of `go test -v` output (a stand-in binary prints it; no Go needed)."""

from __future__ import annotations

import stat

from testsuite.client_suites import run_kgo


def _fake(tmp_path, body: str, code: int):
    exe = tmp_path / "kgo.test"
    exe.write_text(f"#!/bin/sh\necho \"seeds=$KGO_SEEDS records=$KGO_TEST_RECORDS\"\ncat <<'OUT'\n{body}\nOUT\nexit {code}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def test_results_per_test_and_subtest(tmp_path):
    out = ("=== RUN   TestTxnEtl\n--- FAIL: TestTxnEtl (23.04s)\n    --- PASS: TestTxnEtl/range (11.45s)\n"
           "    --- FAIL: TestTxnEtl/sticky/848 (16.12s)\n--- PASS: TestGroupETL (28.29s)\nFAIL")
    log = tmp_path / "log"
    got = run_kgo(_fake(tmp_path, out, 1), "127.0.0.1:9", "x", 77, log)
    assert got == {"TestTxnEtl": "FAIL", "TestTxnEtl/range": "PASS", "TestTxnEtl/sticky/848": "FAIL",
                   "TestGroupETL": "PASS"}
    assert "seeds=127.0.0.1:9 records=77" in log.read_text()


def test_a_panic_without_results_is_reported(tmp_path):
    got = run_kgo(_fake(tmp_path, "panic: invalid: consumed too much", 2), "h:1", "x", 1, tmp_path / "log")
    assert got == {"(run)": "EXIT 2"}


def test_share_suite_is_every_kgo_test_gated_on_share_support():
    """`--run share` names exactly the kgo tests that skip without share-group support (`allowShare`)
    in the pinned franz-go source (the Go module cache, when scripts/client-suites has filled it)."""
    import re
    import subprocess
    from pathlib import Path

    import pytest

    from testsuite.client_suites import FRANZ_GO, FRANZ_GO_VERSION, SUITES
    try:
        cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pytest.skip("no Go")
    kgo = Path(cache) / f"{FRANZ_GO}@{FRANZ_GO_VERSION}" / "pkg" / "kgo"
    if not kgo.is_dir():
        pytest.skip(f"franz-go {FRANZ_GO_VERSION} not in the Go module cache (scripts/client-suites fetches it)")
    gated = set()
    for f in kgo.glob("*_test.go"):
        for m in re.finditer(r"^func (Test\w+)\(t \*testing\.T\) \{\n((?:.*\n){0,4})", f.read_text(), re.M):
            if "if !allowShare" in m.group(2):
                gated.add(m.group(1))
    named = set(re.fullmatch(r"\^\((.*)\)\$", SUITES["share"]).group(1).split("|"))
    assert gated and named == gated
