"""Headless Chromium (Debian's `chromium` and `chromium-driver`) through selenium, for the console's tests and
its screenshots: a fresh profile each time, the browser's console log kept, no network but this machine's."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# What headless Chromium needs here (as root, without a GPU, in a container) and what keeps it from calling home.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                  "--disable-extensions", "--hide-scrollbars")
DESKTOP = (1280, 800)
PHONE = (390, 844)


def missing() -> str | None:
    """Why a browser cannot be started here (None: it can)."""
    if shutil.which("chromium") is None or shutil.which("chromedriver") is None:
        return "chromium and chromium-driver are not installed (Debian: apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@contextmanager
def chromium(size: tuple[int, int] = DESKTOP) -> Iterator[Any]:
    """A selenium WebDriver on a fresh headless Chromium; its console messages are read with `errors(driver)`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # selenium must not look for a driver or browser to download
    profile = tempfile.mkdtemp(prefix="minibroker-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def errors(driver: Any) -> list[str]:
    """The browser console's errors (and warnings) since the last call: script errors, failed loads, CSP refusals."""
    return [f"{entry['level']}: {entry['message']}" for entry in driver.get_log("browser")
            if entry["level"] in ("SEVERE", "WARNING")]
