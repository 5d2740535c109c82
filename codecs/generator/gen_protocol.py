"""Protocol vocabulary: kcodec/generated/protocol_names.py from the pinned vocabulary.

codecs/schemas/protocol-vocabulary.json is what Kafka's own ApiKeys and Errors enums say, read
from the pinned kafka-clients jar by scripts/kafka/ProtocolVocabulary.java (scripts/pin-schemas):
- API keys: (id, constant name) of every ApiKeys constant, keys whose schemas have no valid
  version any more included; each request schema's apiKey must be there under the name
  MessageGenerator.toSnakeCase(name).toUpperCase() gives (JoinGroup -> JOIN_GROUP);
- Errors: (code, name, retriable, default message, exception class); retriable = the error's
  exception is a RetriableException (Errors.exception() instanceof RetriableException).
"""
from __future__ import annotations

import json
from pathlib import Path

from gen_module import HEADER

VOCABULARY = "protocol-vocabulary.json"


class VocabularyError(ValueError):
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


def load_vocabulary(schema_dir: Path, schema_api_names: dict[int, str]):
    """(api keys {id: constant}, error rows [(name, code, retriable, message, exception)] by code)
    from the pinned vocabulary, checked against the schemas' request api keys."""
    path = schema_dir / VOCABULARY
    if not path.is_file():
        raise VocabularyError(f"{path} missing (run scripts/pin-schemas)")
    data = json.loads(path.read_text(encoding="utf-8"))
    api_keys = {int(k): str(name) for k, name in data["api_keys"]}
    if len(api_keys) != len(data["api_keys"]):
        raise VocabularyError("duplicate api key in the vocabulary")
    for key, name in schema_api_names.items():
        if api_keys.get(key) != api_constant(name):
            raise VocabularyError(f"schema {name} (api key {key}) is {api_keys.get(key)!r} in Kafka's ApiKeys")
    rows = [(str(name), int(code), bool(retriable), message, exc)
            for code, name, retriable, message, exc in data["errors"]]
    codes = [r[1] for r in rows]
    if len(set(codes)) != len(codes):
        raise VocabularyError("duplicate error code in the vocabulary")
    return api_keys, sorted(rows, key=lambda r: r[1])


def gen_protocol_names(schema_api_names: dict[int, str], schema_dir: Path, kafka_version: str | None) -> str:
    api_keys, rows = load_vocabulary(schema_dir, schema_api_names)
    lines = [
        HEADER,
        '"""Kafka protocol vocabulary of Kafka ' f"{kafka_version}" ': API keys and error codes.',
        "",
        "ApiKey: Kafka's ApiKeys constants (api keys whose schemas have no valid version any",
        "more included, as in Kafka). Error: Kafka's Errors constants; ERROR_INFO[code] ->",
        "ErrorInfo(name, retriable, message): retriable when Kafka's exception class extends",
        "RetriableException, message = Kafka's default message (None for NONE);",
        "ERROR_EXCEPTIONS[code] -> Kafka's exception class. Source: the ApiKeys and Errors enums",
        "of the pinned kafka-clients jar (codecs/schemas/protocol-vocabulary.json, gen_protocol.py).",
        '"""',
        "from enum import IntEnum",
        "from typing import NamedTuple",
        "",
        f"KAFKA_VERSION = {kafka_version!r}",
        "",
        "",
        "class ApiKey(IntEnum):",
        *[f"    {name} = {key}" for key, name in sorted(api_keys.items())],
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
