"""Real clients' own integration tests, run against the real broker and through kshim.

franz-go's kgo package tests run against any cluster named by KGO_SEEDS: TestGroupETL (a producer,
then a chain of groups consuming and re-producing with the range, cooperative-sticky and KIP-848
range/sticky balancers, static members too) and TestTxnEtl (the same chain inside transactions:
GroupTransactSession, TxnOffsetCommit, EndTxn, read_committed downstream). The module comes from the
Go module proxy at a pinned version (its zip carries the tests), is compiled once into
build/client-suites/, then run once per target. Without --bootstrap, a local Kafka is started and
kshim in front of it (the broker's group timing), and a test that passes on the broker but not
through kshim fails the run (exit 1).

`--run` takes a go test -run pattern or a suite name: `groups` (the two ETL chains, the default) or
`share`, franz-go's KIP-932 share-group tests against a broker (share_test.go: TestShareGroupETL,
a two-level chain of share groups with accept/release/reject strategies and rebalances,
TestShareGroupAckOnClose, TestShareGroupOffsetsAdmin; client_test.go TestShareGroup; consumer_test.go
TestConsumeRegexShareSkipsInternal). franz-go skips those when ApiVersions lacks ShareFetch v2 and
ShareAcknowledge v2, so a SKIP through kshim where the broker passes counts as worse.

Usage: python -m testsuite.client_suites [--bootstrap HOST:PORT ...] [--records 20000] [--run REGEX|SUITE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

FRANZ_GO = "github.com/twmb/franz-go"
FRANZ_GO_VERSION = "v1.22.2"
DEFAULT_RUN = "^(TestGroupETL|TestTxnEtl)$"
SHARE_RUN = ("^(TestShareGroup|TestShareGroupETL|TestShareGroupAckOnClose|TestShareGroupOffsetsAdmin"
             "|TestConsumeRegexShareSkipsInternal)$")
SUITES = {"groups": DEFAULT_RUN, "share": SHARE_RUN}
RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+) \(([\d.]+)s\)")


def _root() -> Path:
    return Path(__file__).resolve().parents[1]


def build_kgo_tests(out_dir: Path) -> Path:
    """go mod download the pinned franz-go, copy it (the module cache is read-only), go test -c."""
    binary = out_dir / f"kgo-{FRANZ_GO_VERSION}.test"
    if binary.exists():
        return binary
    if shutil.which("go") is None:
        raise SystemExit("client-suites: needs Go (https://go.dev/dl/) to build franz-go's tests")
    out_dir.mkdir(parents=True, exist_ok=True)
    info = json.loads(subprocess.run(["go", "mod", "download", "-json", f"{FRANZ_GO}@{FRANZ_GO_VERSION}"],
                                     cwd=out_dir, check=True, capture_output=True, text=True).stdout)
    src = out_dir / f"franz-go-{FRANZ_GO_VERSION}"
    if not src.exists():
        shutil.copytree(info["Dir"], src)
        for p in [src, *src.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)
    print(f"building franz-go {FRANZ_GO_VERSION} kgo tests ...", file=sys.stderr, flush=True)
    subprocess.run(["go", "test", "-c", "-o", str(binary), "./pkg/kgo"], cwd=src, check=True,
                   env={**os.environ, "GOFLAGS": "-mod=mod"})
    return binary


def run_kgo(binary: Path, seeds: str, run: str, records: int, log: Path, timeout: float = 1500) -> dict[str, str]:
    """{test name: PASS|FAIL|SKIP|TIMEOUT} of one run against `seeds`; the output goes to `log`."""
    env = {**os.environ, "KGO_SEEDS": seeds, "KGO_TEST_RF": "1", "KGO_TEST_RECORDS": str(records),
           "KGO_LOG_LEVEL": "warn"}
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        try:
            proc = subprocess.run([str(binary), "-test.run", run, "-test.v", "-test.timeout", f"{int(timeout)}s"],
                                  stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout + 60)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    results = {}
    for line in log.read_text(errors="replace").splitlines():
        m = RESULT.match(line)
        if m:
            results[m.group(2)] = m.group(1)
    if code is None or (code != 0 and not any(v == "FAIL" for v in results.values())):
        results["(run)"] = "TIMEOUT" if code is None else f"EXIT {code}"    # a panic or a hang
    return results


def _local_targets(stack) -> list[tuple[str, str]]:
    from shim.localkafka import LocalKafka
    from shim.testing.kshimproc import KshimProcess
    from shim.testing.ports import free_port_block
    run_dir = _root() / "build" / "client-suites" / "run"
    base = free_port_block(2, start=35100)
    kafka = LocalKafka(nodes=1, base_port=base, workdir=run_dir / "kafka")
    kafka.start()
    stack.append(kafka.stop)
    kshim = KshimProcess(kafka.bootstrap, free_port_block(5, start=35200), run_dir / "kshim.log").start()
    stack.append(kshim.stop)
    return [("broker", kafka.bootstrap), ("kshim", kshim.bootstrap)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", action="append", help="run against this cluster only (repeatable)")
    ap.add_argument("--records", type=int, default=20000, help="records the producer writes (KGO_TEST_RECORDS)")
    ap.add_argument("--run", default="groups",
                    help=f"go test -run pattern, or a suite: {', '.join(f'{k} = {v}' for k, v in SUITES.items())}")
    args = ap.parse_args(argv)
    args.run = SUITES.get(args.run, args.run)
    out_dir = _root() / "build" / "client-suites"
    binary = build_kgo_tests(out_dir)
    stack: list = []
    try:
        targets = ([(b, b) for b in args.bootstrap] if args.bootstrap else _local_targets(stack))
        table: dict[str, dict[str, str]] = {}
        for name, seeds in targets:
            t0 = time.monotonic()
            print(f"franz-go {FRANZ_GO_VERSION} {args.run} against {name} ({seeds}) ...", file=sys.stderr, flush=True)
            log = out_dir / "logs" / f"kgo-{re.sub(r'[^A-Za-z0-9.-]', '_', name)}.log"
            table[name] = run_kgo(binary, seeds, args.run, args.records, log)
            print(f"  done in {time.monotonic() - t0:.0f}s; output in {log}", file=sys.stderr, flush=True)
    finally:
        for stop in reversed(stack):
            stop()
    names = [n for n, _ in targets]
    tests = sorted({t for r in table.values() for t in r}, key=lambda t: (t.count("/"), t))
    width = max(len(t) for t in tests) if tests else 10
    print(f"{'test':<{width}}  " + "  ".join(f"{n:<8}" for n in names))
    for t in tests:
        print(f"{t:<{width}}  " + "  ".join(f"{table[n].get(t, '-'):<8}" for n in names))
    if args.bootstrap:
        return 0 if all(v in ("PASS", "SKIP") for r in table.values() for v in r.values()) else 1
    worse = [t for t in tests if table["broker"].get(t) == "PASS" and table["kshim"].get(t) != "PASS"]
    print("through kshim: " + ("every test the broker passes passes" if not worse else f"worse on {worse}"))
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
