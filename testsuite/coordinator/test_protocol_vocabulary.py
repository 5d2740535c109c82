"""The coordinator (and the rest of shim: proxy, state, authz, kafkaclient, trace, compat, ...) takes
error codes and API keys from kcodec.protocol (generated from Kafka's Errors and ApiKeys), never from
numbers written by hand.

Every module is parsed with `ast` (nothing is imported): an assignment at module or class level to a
name Kafka gives an error code or an API key must take the generated member of that name
(`X = Error.X`, or `E.X` / `K.X` / `ApiKey.X`, or `int(ApiKey.X)` where a plain int is wanted), never
a number or another member."""

from __future__ import annotations

import ast
from pathlib import Path

from kcodec.protocol import ApiKey, Error

ROOT = Path(__file__).resolve().parents[2]
COORDINATOR = ROOT / "shim" / "coordinator"
# kept to the vocabulary as well
ALSO = [ROOT / "shim" / "trace", ROOT / "shim" / "compat", ROOT / "shim" / "metrics.py", ROOT / "shim" / "proxy",
        ROOT / "shim" / "state", ROOT / "shim" / "authz", ROOT / "shim" / "kafkaclient",
        ROOT / "shim" / "error_answers.py", ROOT / "shim" / "faultrules.py"]
# names Kafka also gives to something that is neither an error nor an API key
NOT_PROTOCOL = {"shim/authz/acl.py": {"DESCRIBE_CONFIGS", "ALTER_CONFIGS"}}   # AclOperation codes
NAMES = set(Error.__members__) | set(ApiKey.__members__)


def _targets(target: ast.expr, value: ast.expr | None):
    """(name, value) pairs of an assignment target, tuples unpacked against tuple values."""
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [None] * len(target.elts)
        for t, v in zip(target.elts, values):
            yield from _targets(t, v)


def _assignments(body: list[ast.stmt]):
    for node in body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                yield from ((n, v, node.lineno) for n, v in _targets(t, node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield from ((n, v, node.lineno) for n, v in _targets(node.target, node.value))
        elif isinstance(node, ast.ClassDef):
            yield from _assignments(node.body)


def _is_number(v: ast.expr | None) -> bool:
    if isinstance(v, ast.UnaryOp) and isinstance(v.op, (ast.USub, ast.UAdd)):
        v = v.operand
    return isinstance(v, ast.Constant) and isinstance(v.value, int) and not isinstance(v.value, bool)


def _member(value: ast.expr | None, name: str) -> bool:
    """`<x>.<name>` or `int(<x>.<name>)`."""
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "int"
            and len(value.args) == 1 and not value.keywords):
        value = value.args[0]
    return isinstance(value, ast.Attribute) and value.attr == name


def hand_written(source: str) -> list[tuple[int, str]]:
    """(line, name) of each assignment of a Kafka error or API key name that is not its member."""
    return [(line, name) for name, value, line in _assignments(ast.parse(source).body)
            if name in NAMES and not _member(value, name)]


def _found(paths) -> list[str]:
    files = sorted(f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py")))
    return [f"{f.relative_to(ROOT)}:{line}: {name}" for f in files for line, name in hand_written(f.read_text())
            if name not in NOT_PROTOCOL.get(f.relative_to(ROOT).as_posix(), ())]


def test_no_hand_written_error_codes_or_api_keys_in_the_coordinator():
    found = _found([COORDINATOR])
    assert found == [], "take these from kcodec.protocol.Error / ApiKey:\n" + "\n".join(found)


def test_no_hand_written_error_codes_or_api_keys_in_the_rest_of_shim():
    found = _found(ALSO)
    assert found == [], "take these from kcodec.protocol.Error / ApiKey:\n" + "\n".join(found)


def test_the_scan_finds_hand_written_codes():
    src = ("UNKNOWN_MEMBER_ID = 25\nNONE, FENCED_MEMBER_EPOCH = 0, 110\nJOIN_GROUP: int = 11\n"
           "class X:\n    error_code = 1\n    REBALANCE_IN_PROGRESS = -27\n"
           "ILLEGAL_GENERATION = Error.UNKNOWN_MEMBER_ID\n"
           "STALE_MEMBER_EPOCH = Error.STALE_MEMBER_EPOCH\nHEARTBEAT = ApiKey.HEARTBEAT\nOTHER = 5\n"
           "SYNC_GROUP, LEAVE_GROUP = int(ApiKey.SYNC_GROUP), int(ApiKey.HEARTBEAT)\n")
    assert hand_written(src) == [(1, "UNKNOWN_MEMBER_ID"), (2, "NONE"), (2, "FENCED_MEMBER_EPOCH"),
                                 (3, "JOIN_GROUP"), (6, "REBALANCE_IN_PROGRESS"), (7, "ILLEGAL_GENERATION"),
                                 (11, "LEAVE_GROUP")]


def test_the_coordinator_names_are_the_generated_members():
    from shim.coordinator import api_keys, errors
    from shim.coordinator.consumer import codes
    for module, enum in ((errors, Error), (codes, Error), (api_keys, ApiKey)):
        names = [n for n in vars(module) if n in enum.__members__]
        assert names and all(getattr(module, n) is enum[n] for n in names), module.__name__
