"""Running the engine's coroutines from synchronous code."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_coroutine(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """asyncio.run, also from a thread that already runs an event loop (then on a fresh
    thread): a Celery worker has none, but a caller inside an async framework may."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()
