"""uvloop is a default dependency (where it has a build); `--loop auto` falls back to asyncio."""

from __future__ import annotations

import asyncio
import platform
import sys
from importlib.metadata import requires

import pytest

from shim.runner import new_event_loop


def test_uvloop_is_a_default_dependency():
    default = [r for r in requires("kshim") if "extra ==" not in r]
    assert any(r.startswith("uvloop") for r in default), default


@pytest.mark.skipif(sys.platform == "win32" or platform.python_implementation() != "CPython",
                    reason="uvloop has no build here: asyncio is the loop")
def test_auto_picks_uvloop():
    import uvloop
    loop = new_event_loop("auto")
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def test_auto_falls_back_to_asyncio(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvloop", None)   # import uvloop now raises ImportError
    loop = new_event_loop("auto")
    try:
        assert type(loop).__module__.startswith("asyncio")
    finally:
        loop.close()
    with pytest.raises(SystemExit, match="pip install uvloop"):
        new_event_loop("uvloop")
    asyncio.set_event_loop(None)
