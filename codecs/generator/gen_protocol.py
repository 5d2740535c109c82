"""Protocol vocabulary: kcodec/generated/protocol_names.py from the pinned sources.

- API keys: every schema of type "request" gives (apiKey, name); the enum constant is spelled
  as Kafka's ApiKeys/ApiMessageType spell it (MessageGenerator.toSnakeCase(name), upper case),
  so JoinGroup -> JOIN_GROUP. Keys whose schemas have no valid version any more are kept
  (Kafka's ApiKeys still lists them).
- Errors: the constants of Kafka's Errors enum, read from the pinned Errors.java
  (codecs/schemas/java/, see scripts/pin-schemas): name, code, default message and exception
  class. retriable = that class extends RetriableException, directly or through other
  classes, resolved through the pinned exception sources (imports and package of each file).
"""
from __future__ import annotations

import re
from pathlib import Path

from gen_module import HEADER

ERRORS_JAVA = "org/apache/kafka/common/protocol/Errors.java"
RETRIABLE = "org/apache/kafka/common/errors/RetriableException.java"
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "s": " ",
            '"': '"', "'": "'", "\\": "\\"}


class JavaSourceError(ValueError):
    pass


def api_constant(name: str) -> str:
    """Kafka's MessageGenerator.toSnakeCase(name).toUpperCase(): an underscore before each
    capital that follows a non-capital (DescribeACLs would give DESCRIBE_ACLS)."""
    out, prev_cap = [], True
    for ch in name:
        if ch.isupper():
            if not prev_cap:
                out.append("_")
            prev_cap = True
        else:
            prev_cap = False
        out.append(ch.upper())
    return "".join(out)


def _tokens(text: str):
    """(kind, value) tokens of Java source: 'str' literals (unescaped), 'word', 'op' single
    characters and '::' / '->'; comments and whitespace dropped."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise JavaSourceError("unterminated comment")
            i = end + 2
        elif c == '"':
            buf, i = [], i + 1
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    nxt = text[i + 1]
                    if nxt == "u":
                        buf.append(chr(int(text[i + 2:i + 6], 16)))
                        i += 6
                        continue
                    if nxt not in _ESCAPES:
                        raise JavaSourceError(f"unsupported escape \\{nxt}")
                    buf.append(_ESCAPES[nxt])
                    i += 2
                else:
                    buf.append(text[i])
                    i += 1
            if i >= n:
                raise JavaSourceError("unterminated string literal")
            yield "str", "".join(buf)
            i += 1
        elif text.startswith("::", i) or text.startswith("->", i):
            yield "op", text[i:i + 2]
            i += 2
        elif c.isalnum() or c in "_$":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_$"):
                j += 1
            yield "word", text[i:j]
            i = j
        else:
            yield "op", c
            i += 1


def _split_args(toks: list) -> list[list]:
    args, cur, depth = [], [], 0
    for t in toks:
        if t == ("op", ",") and depth == 0:
            args.append(cur)
            cur = []
            continue
        if t[0] == "op" and t[1] in "([{":
            depth += 1
        elif t[0] == "op" and t[1] in ")]}":
            depth -= 1
        cur.append(t)
    args.append(cur)
    return args


def _int(arg: list, where: str) -> int:
    text = "".join(v for _, v in arg)
    if not re.fullmatch(r"-?\d+", text):
        raise JavaSourceError(f"{where}: code is not an integer literal: {text!r}")
    return int(text)


def _message(arg: list, where: str) -> str | None:
    if arg == [("word", "null")]:
        return None
    parts = [v for k, v in arg if k == "str"]
    if not parts or any(t != ("op", "+") for t in arg if t[0] != "str"):
        raise JavaSourceError(f"{where}: message is not a concatenation of string literals")
    return "".join(parts)


def _exception(arg: list, where: str) -> str | None:
    """X::new -> "X"; a lambda returning null (NONE) -> None; message -> new X(message) -> "X"."""
    if len(arg) == 3 and arg[1:] == [("op", "::"), ("word", "new")]:
        return arg[0][1]
    words = [v for k, v in arg if k == "word"]
    if "new" in words:
        return words[words.index("new") + 1]
    if ("op", "->") in arg and words[-1] == "null":
        return None
    raise JavaSourceError(f"{where}: cannot read the exception builder")


def parse_errors(text: str) -> list[tuple[str, int, str | None, str | None]]:
    """[(name, code, default message, exception simple name)] in declaration order."""
    toks = list(_tokens(text))
    for i in range(len(toks) - 3):
        if toks[i:i + 4] == [("word", "public"), ("word", "enum"), ("word", "Errors"), ("op", "{")]:
            i += 4
            break
    else:
        raise JavaSourceError("no 'public enum Errors {'")
    out = []
    while toks[i] != ("op", ";"):
        kind, name = toks[i]
        if kind != "word" or toks[i + 1] != ("op", "("):
            raise JavaSourceError(f"unexpected {name!r} in the Errors constants")
        depth, j = 1, i + 2
        while depth:
            if toks[j] == ("op", "("):
                depth += 1
            elif toks[j] == ("op", ")"):
                depth -= 1
            j += 1
        args = _split_args(toks[i + 2:j - 1])
        if len(args) != 3:
            raise JavaSourceError(f"{name}: expected (code, message, builder), got {len(args)} arguments")
        out.append((name, _int(args[0], name), _message(args[1], name), _exception(args[2], name)))
        i = j
        if toks[i] == ("op", ","):
            i += 1
    codes = [c for _, c, _, _ in out]
    if len(set(codes)) != len(codes):
        raise JavaSourceError("duplicate error code in Errors.java")
    return out


class Hierarchy:
    """Superclass chains of the pinned Java sources (root: codecs/schemas/java)."""

    def __init__(self, root: Path):
        self.root = root

    def resolve(self, simple: str, text: str, package: str) -> str:
        m = re.search(rf"^import\s+([\w.]+)\.{re.escape(simple)}\s*;", text, re.M)
        return (m.group(1) if m else package).replace(".", "/") + f"/{simple}.java"

    def chain(self, path: str) -> list[str]:
        """path, its superclass, ... up to the first class outside the pinned sources."""
        out = []
        while path not in out:
            f = self.root / path
            if not f.is_file():
                if not out:
                    raise JavaSourceError(f"{path} is not pinned (run scripts/pin-schemas)")
                break
            out.append(path)
            text = f.read_text(encoding="utf-8")
            simple = path.rsplit("/", 1)[1][:-5]
            m = re.search(rf"\bclass\s+{simple}\b[^{{]*?\bextends\s+([\w.]+)", text)
            pkg = re.search(r"^package\s+([\w.]+)\s*;", text, re.M)
            if not m or not pkg:
                raise JavaSourceError(f"{path}: no package or no 'class {simple} ... extends'")
            path = self.resolve(m.group(1).rsplit(".", 1)[-1], text, pkg.group(1))
        return out


def error_rows(java_root: Path) -> list[tuple[str, int, bool, str | None, str | None]]:
    """[(name, code, retriable, default message, exception class FQN)] sorted by code."""
    errors_file = java_root / ERRORS_JAVA
    if not errors_file.is_file():
        raise JavaSourceError(f"{errors_file} missing (run scripts/pin-schemas)")
    text = errors_file.read_text(encoding="utf-8")
    hier = Hierarchy(java_root)
    rows = []
    for name, code, message, exc in parse_errors(text):
        fqn, retriable = None, False
        if exc is not None:
            path = hier.resolve(exc, text, "org.apache.kafka.common.protocol")
            chain = hier.chain(path)
            retriable = RETRIABLE in chain
            fqn = path[:-5].replace("/", ".")
        rows.append((name, code, retriable, message, fqn))
    return sorted(rows, key=lambda r: r[1])


def gen_protocol_names(api_keys: dict[int, str], java_root: Path, kafka_version: str | None) -> str:
    rows = error_rows(java_root)
    lines = [
        HEADER,
        '"""Kafka protocol vocabulary of Kafka ' f"{kafka_version}" ': API keys and error codes.',
        "",
        "ApiKey: Kafka's ApiKeys constants (api keys whose schemas have no valid version any",
        "more included, as in Kafka). Error: Kafka's Errors constants; ERROR_INFO[code] ->",
        "ErrorInfo(name, retriable, message): retriable when Kafka's exception class extends",
        "RetriableException, message = Kafka's default message (None for NONE);",
        "ERROR_EXCEPTIONS[code] -> Kafka's exception class. Source: the pinned Errors.java and",
        "exception classes in codecs/schemas/java/ (codecs/generator/gen_protocol.py).",
        '"""',
        "from enum import IntEnum",
        "from typing import NamedTuple",
        "",
        f"KAFKA_VERSION = {kafka_version!r}",
        "",
        "",
        "class ApiKey(IntEnum):",
        *[f"    {api_constant(name)} = {key}" for key, name in sorted(api_keys.items())],
        "",
        "",
        "class Error(IntEnum):",
        *[f"    {name} = {code}" for name, code, _, _, _ in rows],
        "",
        "",
        "class ErrorInfo(NamedTuple):",
        "    name: str",
        "    retriable: bool",
        "    message: 'str | None'",
        "",
        "",
        "ERROR_INFO = {",
        *[f"    {code}: ErrorInfo({name!r}, {retriable!r}, {message!r}),"
          for name, code, retriable, message, _ in rows],
        "}",
        "",
        "ERROR_EXCEPTIONS = {",
        *[f"    {code}: {fqn!r}," for name, code, _, _, fqn in rows if fqn],
        "}",
    ]
    return "\n".join(lines) + "\n"
