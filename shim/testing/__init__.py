"""kshim for other projects' test suites: the pytest plugin (shim/testing/plugin.py, opt-in with
`--kshim`; docs/pytest-plugin.md), kshim as a subprocess, free local port blocks."""
