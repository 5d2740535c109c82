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
