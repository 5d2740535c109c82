"""Fresh topic and group names per test, readable in broker logs and traces."""

from __future__ import annotations

import re
import uuid


def unique_name(prefix: str, test_name: str = "") -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", test_name).strip("-")[:40]
    return f"{prefix}-{base}-{uuid.uuid4().hex[:8]}" if base else f"{prefix}-{uuid.uuid4().hex[:8]}"
