"""docs/architecture.md names every hand-written module under shim/ by its file name (a reader finds
each one there)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_shim_module_is_named_in_the_architecture_page():
    page = (ROOT / "docs" / "architecture.md").read_text()
    missing = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "shim").rglob("*.py"))
               if p.name != "__init__.py" and not re.search(rf"(?<![\w.]){re.escape(p.name)}\b", page)]
    assert missing == [], f"not named in docs/architecture.md: {missing}"
