"""The kshim pytest plugin (entry point `pytest11: kshim`; docs/pytest-plugin.md).

Opt-in, so installing kshim never changes another project's test run: the fixtures exist only with
`pytest --kshim` or `kshim = true` in the pytest ini section. The fixtures live in
shim/testing/fixtures.py; this module only adds the options and registers them.
"""

from __future__ import annotations


def pytest_addoption(parser) -> None:
    g = parser.getgroup("kshim", "kshim: a real local Kafka and kshim in front of it (docs/pytest-plugin.md)")
    g.addoption("--kshim", action="store_true", default=False,
                help="enable the kshim fixtures (kshim_kafka, kshim_server, kshim_names, kshim_topic, "
                     "kshim_trace, kshim_factory, compare_with_broker)")
    g.addoption("--kshim-upstream", metavar="HOST:PORT", default=None,
                help="use this running Kafka instead of starting a local one (default: start one; "
                     "needs Java 17+ and KAFKA_HOME)")
    g.addoption("--kshim-args", metavar="FLAGS", default=None,
                help="extra `kshim run` flags for the session's kshim, e.g. '--group-coordinator broker'")
    parser.addini("kshim", type="bool", default=False, help="enable the kshim fixtures (as --kshim)")
    parser.addini("kshim_upstream", default="", help="as --kshim-upstream")
    parser.addini("kshim_args", default="", help="as --kshim-args")


def pytest_configure(config) -> None:
    if config.getoption("kshim") or config.getini("kshim"):
        from . import fixtures
        if not config.pluginmanager.is_registered(fixtures):
            config.pluginmanager.register(fixtures, "kshim-fixtures")
