"""Every option of every `kshim` command has a help line (meaning, and a unit for numbers)."""

from __future__ import annotations

import argparse

from shim.cli import build_parser
from shim.config import FIELDS
from shim.confighelp import HELP

# a numeric option's help names what it counts or measures
UNITS = ("second", "millisecond", "minute", "byte", "MB", "port", "partitions", "nodes", "members",
         "lines", "chars", "groups", "scenarios", "seed", "records", "at once")


def walk(parser: argparse.ArgumentParser, path: str = "kshim"):
    """(command path, action) for every action of `parser` and its subcommands."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, f"{path} {name}")
        else:
            yield path, action


def problems(parser: argparse.ArgumentParser) -> list[str]:
    actions = list(walk(parser))
    documented = {(p, o) for p, a in actions for o in a.option_strings
                  if a.help and a.help != argparse.SUPPRESS}
    out = []
    for path, a in actions:
        name = "/".join(a.option_strings) or a.dest
        if a.help == argparse.SUPPRESS:
            # hidden only as the negation of a documented --flag
            if not all(o.startswith("--no-") and (path, "--" + o[5:]) in documented for o in a.option_strings):
                out.append(f"{path} {name}: hidden without a documented --flag")
        elif not (a.help or "").strip():
            out.append(f"{path} {name}: no help text")
        elif a.type in (int, float) and not any(u in a.help for u in UNITS):
            out.append(f"{path} {name}: numeric option without a unit in {a.help!r}")
    return out


def test_every_option_has_help():
    assert problems(build_parser()) == []


def test_the_check_catches_an_undocumented_option():
    p = build_parser()
    run = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    run.add_argument("--undocumented-option")
    run.add_argument("--timeout-thing", type=float, help="how long to wait")
    assert problems(p) == ["kshim run --undocumented-option: no help text",
                           "kshim run --timeout-thing: numeric option without a unit in 'how long to wait'"]


def test_every_setting_has_a_help_line():
    assert set(HELP) == set(FIELDS)
