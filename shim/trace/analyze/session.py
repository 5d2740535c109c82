"""The SparkSession for `kshim trace analyze` and progress on stderr (our stage names, and Spark's
active stages with task counts from the status tracker, polled once a second)."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path


def code_zip(directory: Path) -> Path:
    """The packages the executors run (shim, kcodec) as one zip for `addPyFile`, so any master works."""
    import kcodec
    import shim
    path = Path(directory) / "kshim-code.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for pkg in (shim, kcodec):
            root = Path(pkg.__file__).parent
            for f in root.rglob("*.py"):
                z.write(f, Path(root.name) / f.relative_to(root))
    return path


def spark_session(master: str = "local[*]", shuffle_partitions: int | None = None, driver_memory: str = "2g",
                  app_name: str = "kshim trace analyze", python: str | None = None):
    """`python`: the executors' interpreter (default: this one, right for local and this machine's
    standalone master; give the cluster's for yarn)."""
    from pyspark.sql import SparkSession
    # Spark starts its Python workers from the interpreter's real path, outside this virtualenv: they
    # find its packages (the codec's crc32c, dpkt for trace import) through PYTHONPATH. Local workers
    # take the driver's environment, a cluster's executors spark.executorEnv.
    import site
    paths = os.pathsep.join(p for p in [*site.getsitepackages(), os.environ.get("PYTHONPATH", "")] if p)
    os.environ["PYTHONPATH"] = paths
    b = (SparkSession.builder.master(master).appName(app_name)
         .config("spark.executorEnv.PYTHONPATH", paths)
         .config("spark.pyspark.python", python or sys.executable)
         .config("spark.pyspark.driver.python", sys.executable)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.driver.memory", driver_memory)
         .config("spark.sql.shuffle.partitions", str(shuffle_partitions or (4 if master.startswith("local") else 16)))
         .config("spark.python.worker.reuse", "true"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    tmp = Path(tempfile.mkdtemp(prefix="kshim-analyze-"))
    spark.sparkContext.addPyFile(str(code_zip(tmp)))
    return spark


class Progress:
    """`[analyze ...] stage` lines and, while Spark works, `spark: stage N tasks d/t (r running, s s)`
    lines, at most one every `every` seconds (and only when something changed)."""

    def __init__(self, spark=None, out=sys.stderr, interval: float = 1.0, every: float = 10.0):
        self.out, self.interval, self.every, self.t0 = out, interval, every, time.monotonic()
        self.spark = spark
        self._stop = threading.Event()
        self._thread = None
        self._last = ""

    def stage(self, name: str) -> None:
        print(f"[analyze {time.monotonic() - self.t0:7.1f}s] {name}", file=self.out, flush=True)
        if self.spark is not None:
            self.spark.sparkContext.setJobDescription(name)

    def start(self) -> "Progress":
        if self.spark is not None:
            self._thread = threading.Thread(target=self._poll, daemon=True, name="kshim-spark-progress")
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _poll(self) -> None:
        tracker = self.spark.sparkContext.statusTracker()
        printed, seen = 0.0, {}
        while not self._stop.wait(self.interval):
            try:
                line, now = _spark_line(tracker, seen), time.monotonic()
                if line and line != self._last and now - printed >= self.every:
                    self._last, printed = line, now
                    print(f"  spark: {line}", file=self.out, flush=True)
            except Exception:   # the context is stopping
                return


def _spark_line(tracker, seen: dict[int, float]) -> str:
    """The active Spark stages in one line: those with tasks done or running by id and task counts
    (and how long since they were first seen busy: `seen`, stage id -> time.monotonic()), the ones
    still waiting counted."""
    busy, waiting = [], 0
    for sid in sorted(tracker.getActiveStageIds()):
        info = tracker.getStageInfo(sid)
        if info is None:
            continue
        if info.numActiveTasks == 0 and info.numCompletedTasks == 0:
            waiting += 1
            continue
        ran = int(time.monotonic() - seen.setdefault(sid, time.monotonic()))
        busy.append(f"stage {sid} tasks {info.numCompletedTasks}/{info.numTasks} ({info.numActiveTasks} running, {ran} s)")
    return "; ".join(busy) + (f"; {waiting} stage(s) waiting" if waiting and busy else "")
