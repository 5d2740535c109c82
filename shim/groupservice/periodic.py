"""A background step run every `interval_s` on the event loop; a failed step is reported to
`on_error` and the next one runs on time (cancellation ends it)."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable


async def every(interval_s: float, step: Callable[[], Awaitable[None]],
                on_error: Callable[[Exception], None]) -> None:
    while True:
        await asyncio.sleep(interval_s)
        try:
            await step()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            on_error(e)
