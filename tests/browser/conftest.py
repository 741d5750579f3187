"""Fixtures for the browser tests: a JupyterLab server on a copy of the notebooks, headless
Chromium, a screenshot directory. See labdriver.py for how each is started."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from labdriver import (
    INSTALL_HINT,
    SCREENSHOTS_ENV,
    SKIP_ENV,
    make_driver,
    missing_browser,
    start_lab,
)


@pytest.fixture(scope="session")
def browser_available():
    """Skip with REACT_LAB_SKIP_BROWSER=1; otherwise fail when Chromium or Selenium is missing."""
    if os.environ.get(SKIP_ENV, "").strip().lower() in {"1", "true", "yes"}:
        pytest.skip(f"{SKIP_ENV} is set")
    missing = missing_browser()
    if missing:
        pytest.fail(f"missing {missing}: {INSTALL_HINT}", pytrace=False)


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory, capsys_disabled_print):
    """Where screenshots go: $REACT_LAB_SCREENSHOTS, or a directory under pytest's tmp dir."""
    keep = os.environ.get(SCREENSHOTS_ENV)
    path = Path(keep).resolve() if keep else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    capsys_disabled_print(f"\nbrowser test screenshots: {path}")
    return path


@pytest.fixture(scope="session")
def capsys_disabled_print(pytestconfig):
    """Print a line to the terminal even while pytest captures output."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")

    def say(line: str) -> None:
        with capture.global_and_fixture_disabled():
            print(line, flush=True)

    return say


@pytest.fixture(scope="module")
def lab(browser_available, tmp_path_factory):
    """JupyterLab on a trusted copy of notebooks/ (the repository's files are never touched)."""
    server = start_lab(tmp_path_factory.mktemp("lab"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def driver(browser_available, tmp_path_factory):
    """Headless Chromium with a fresh profile, driven by the distribution's chromedriver."""
    home = tmp_path_factory.mktemp("chromium")
    browser = make_driver(home / "profile", home / "chromedriver.log")
    yield browser
    browser.quit()
