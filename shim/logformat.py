"""Structured logs (`--log-format json`): one JSON object per line on stderr.

Fields: ts (UTC, ISO 8601 with milliseconds), level, logger, msg (the formatted message); with an
exception, exc (its traceback text). Coordinator event lines keep their `key=value` message text.
"""

from __future__ import annotations

import json
import logging
import time


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        out = {"ts": ts, "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)
