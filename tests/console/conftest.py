"""The console's browser tests: one headless Chromium per module (a fresh profile), a fresh broker per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.console.browser import chromium, errors, missing


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = missing()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(reason + "; `make test` installs them")
        pytest.skip(reason)
    with chromium() as driver:
        yield driver


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """The browser, its console log emptied first and checked after the test: no script error, failed load or
    refused resource on any page the test opened."""
    errors(browser)
    browser.set_window_size(1280, 800)
    yield browser
    assert errors(browser) == []
