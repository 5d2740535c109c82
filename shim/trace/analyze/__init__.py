"""`kshim trace analyze DIR --out REPORT`: the PySpark pipeline that turns wire traces into rebalance
timelines (docs/kshim-trace.md). Needs `pip install 'kshim[analyze]'` (pyspark, pyarrow) and a JDK 17+.

  load.py        trace files (JSON lines and Parquet) -> one DataFrame, explicit schema
  timeline.py    one group's records -> generations, membership, changes (pure Python)
  rebalances.py  timeline.py run per group on Spark
  members.py     heartbeat gaps vs session timeout, commit cadence (Spark SQL)
  member_timeline.py  one share/streams group's heartbeats -> member joins, epochs, assignments,
                 leaves, fencing (pure Python);  heartbeats.py  it, run per group on Spark
  anomalies.py   storms, flapping, static rejoins with a new member id, slow revocation
  report.py      Parquet tables, HTML with SVG timelines, PNG by headless chromium
  assignment.py  ConsumerProtocolAssignment bytes -> partitions (kcodec)
  session.py     SparkSession, progress on stderr;  pipeline.py  the job;  command.py  the CLI
"""
