"""Start JupyterLab as the workshop command does and drive it with headless Chromium.

Used by the browser tests (``conftest.py``); importable on its own for experiments.
Nothing here downloads anything: the browser and its driver are the distribution's
(Debian: ``apt-get install chromium chromium-driver``), and Selenium Manager is told
to stay offline.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Set to 1 to skip the browser tests (a local developer's choice where Chromium is missing;
#: CI installs Chromium and never sets it).
SKIP_ENV = "REACT_LAB_SKIP_BROWSER"
#: A directory that keeps the screenshots after the run (default: pytest's tmp dir).
SCREENSHOTS_ENV = "REACT_LAB_SCREENSHOTS"
CHROMIUM = os.environ.get("REACT_LAB_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("REACT_LAB_CHROMEDRIVER", "/usr/bin/chromedriver")
INSTALL_HINT = (
    "the browser test needs Chromium and its driver: on Debian/Ubuntu "
    "`sudo apt-get install -y chromium chromium-driver` (or point REACT_LAB_CHROMIUM and "
    "REACT_LAB_CHROMEDRIVER at another install); to skip the browser test on your own "
    f"machine, set {SKIP_ENV}=1"
)


def missing_browser() -> str | None:
    """Say what is missing to drive a browser, or None when everything is there."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install -e '.[test]')")
    return ", ".join(missing) or None


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    """A running JupyterLab server: its process, URL, token and notebook directory."""

    process: subprocess.Popen
    url: str
    token: str
    notebook_dir: Path
    log: Path
    notes: list[str]

    def api(self, path: str, method: str = "GET", timeout: float = 10):
        """Call the server's REST API; return the decoded JSON (or None for an empty body)."""
        req = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def page(self, notebook: str) -> str:
        """The URL that opens ``notebook`` in a fresh workspace."""
        return f"{self.url}/lab/tree/{notebook}?reset&token={self.token}"

    def stop(self) -> None:
        """Shut the server and its kernels down (its own shutdown API, then SIGTERM)."""
        if self.process.poll() is None:
            try:
                self.api("/api/shutdown", method="POST")
                self.process.wait(timeout=20)
            except (OSError, urllib.error.URLError, subprocess.TimeoutExpired):
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()


def lab_environment(home: Path) -> dict[str, str]:
    """The server's environment: this one, with every Jupyter state directory under ``home``.

    So the test neither reads nor writes the developer's settings, workspaces or the
    notebook-signature database (where ``jupyter trust`` records trusted notebooks).
    """
    env = dict(os.environ)
    for var, sub in [
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTERLAB_SETTINGS_DIR", "settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
        ("IPYTHONDIR", "ipython"),
    ]:
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(home / sub)
    env.pop("MPLBACKEND", None)  # a learner's kernel shows figures inline
    env.pop("REACT_LAB_SOLUTIONS", None)  # ... and runs the exercise stubs, not the solutions
    return env


def match_python(path: Path) -> str | None:
    """Set the copy's stored Python version to this Python's; say so, or return None.

    JupyterLab writes the kernel's ``language_info`` into a notebook when the kernel
    starts; a different Python version there marks the notebook changed on opening. The
    stored notebooks carry the version that stored them (scripts/store-notebooks.py), so
    on a machine with another Python the copy is brought in line, the rest left as stored.
    """
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    info = nb.get("metadata", {}).get("language_info", {})
    here = platform.python_version()
    if "version" not in info or info["version"] == here:
        return None
    was, info["version"] = info["version"], here
    path.write_text(
        json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return f"{path.name}: stored under Python {was}; the copy says {here}, this kernel's version"


def start_lab(
    workdir: Path, *, notebooks: Path = REPO / "notebooks", trust: bool = True, timeout: float = 90
) -> Lab:
    """Copy ``notebooks`` into ``workdir`` and start JupyterLab on the copy, as the workshop does.

    The workshop command (``scripts/workshop.sh``) marks the shipped notebooks trusted,
    then runs ``jupyter lab --notebook-dir=notebooks``; here the same, plus what a test
    needs: ``--no-browser``, the loopback interface only, a free port and a token the test
    knows. Raises ``RuntimeError`` with the server's log if it does not answer in
    ``timeout`` seconds.
    """
    nb_dir = workdir / "notebooks"
    shutil.copytree(notebooks, nb_dir, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    notes = [match_python(p) for p in sorted(nb_dir.glob("*.ipynb"))]
    env = lab_environment(workdir / "jupyter")
    if trust:
        subprocess.run(
            [sys.executable, "-m", "jupyter", "trust", *sorted(map(str, nb_dir.glob("*.ipynb")))],
            env=env,
            check=True,
            capture_output=True,
        )
    port, token = free_port(), os.urandom(16).hex()
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--notebook-dir={nb_dir}",
    ]
    if hasattr(os, "getuid") and os.getuid() == 0:
        cmd.append("--allow-root")  # as scripts/workshop.sh does in a container
    log = workdir / "jupyterlab.log"
    with log.open("w") as fh:
        process = subprocess.Popen(
            cmd, cwd=workdir, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
    lab = Lab(process, f"http://127.0.0.1:{port}", token, nb_dir, log, [n for n in notes if n])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {process.returncode}:\n{log.read_text()}")
        try:
            lab.api("/api/status", timeout=2)
            return lab
        except (OSError, urllib.error.URLError):
            time.sleep(0.5)
    lab.stop()
    raise RuntimeError(f"JupyterLab did not answer in {timeout:.0f} s:\n{log.read_text()}")


def make_driver(profile: Path, log: Path | None = None, *, width: int = 1400, height: int = 1000):
    """Start headless Chromium under chromedriver, both the distribution's; no downloads.

    ``profile`` is a fresh user-data directory. Selenium Manager is not asked for a
    driver (the path is given) and is set offline in case anything calls it.
    """
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which(CHROMIUM) or CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    service = Service(
        executable_path=shutil.which(CHROMEDRIVER) or CHROMEDRIVER,
        log_output=str(log) if log else subprocess.DEVNULL,
    )
    return webdriver.Chrome(service=service, options=options)


# ----------------------------------------------------------------------- reading the page
# JupyterLab 4's DOM: a notebook panel holds .jp-Cell elements; each output is a
# .jp-OutputArea-output (a rendered MIME bundle, or a panel holding a widget view);
# widget views carry .jupyter-widgets; the stepper carries .react-lab-stepper.

_OUTPUTS_JS = """
const panel = document.querySelector('.jp-NotebookPanel');
if (!panel) return null;
return [...panel.querySelectorAll('.jp-OutputArea-output')].map(e => ({
  mime: e.getAttribute('data-mime-type') || '',
  widget: e.querySelector('.jupyter-widgets') !== null,
  image: e.querySelector('img') !== null,
  text: e.textContent.trim().slice(0, 300)}));
"""

_STATE_JS = """
const panel = document.querySelector('.jp-NotebookPanel');
const prompts = panel ? [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
  .map(e => e.textContent.trim()) : [];
const status = document.querySelector('#jp-main-statusbar');
const toolbar = panel ? panel.querySelector('.jp-NotebookPanel-toolbar') : null;
const kernel = toolbar ? (toolbar.textContent.match(/Kernel status: (\\w+)/) || [])[1] : null;
return {panels: document.querySelectorAll('.jp-NotebookPanel').length,
        cells: panel ? panel.querySelectorAll('.jp-Cell').length : 0, prompts: prompts,
        status: status ? status.textContent : '', kernel: kernel || '',
        dirty: document.querySelectorAll('.lm-TabBar-tab.jp-mod-dirty').length,
        dialogs: document.querySelectorAll('.jp-Dialog').length,
        text: panel ? panel.textContent : ''};
"""


def stored_outputs(path: Path) -> dict[str, int]:
    """Count the stored outputs of the notebook at ``path`` a learner should see rendered.

    ``widgets``: widget views; ``images``: image/png outputs; ``cells``; ``code``: code cells.
    """
    nb = json.loads(path.read_text(encoding="utf-8"))
    outs = [o for c in nb["cells"] for o in c.get("outputs", [])]
    return {
        "cells": len(nb["cells"]),
        "code": sum(c["cell_type"] == "code" for c in nb["cells"]),
        "widgets": sum(
            "application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outs
        ),
        "images": sum("image/png" in o.get("data", {}) for o in outs),
    }


def page_state(driver) -> dict:
    """Notebook panels open; the first one's cells, input prompts and text; the status bar
    text; its kernel's status as its toolbar shows it (``Idle``, ``Busy``; the status bar's
    kernel item is hidden while no panel has focus); how many tabs are marked changed; how
    many dialogs are up."""
    return driver.execute_script(_STATE_JS)


def outputs(driver) -> list[dict]:
    """Every rendered output of the open notebook: mime, widget?, image?, its text."""
    return driver.execute_script(_OUTPUTS_JS) or []


def wait_for(predicate, timeout: float, what: str, interval: float = 0.5):
    """Poll ``predicate()`` until it returns a true value; return it, or raise TimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(interval)


def open_notebook(driver, lab: Lab, name: str, timeout: float = 90) -> dict:
    """Open ``name`` in a fresh workspace; wait until every cell is drawn and its kernel is idle.

    Returns :func:`page_state` at that point. Raises ``AssertionError`` if JupyterLab asks
    "get notified about Jupyter news?": the environment's settings (``binder/overrides.json``,
    installed by ``scripts/setup-env.sh`` and ``binder/postBuild``) switch that question off.
    """
    driver.get(lab.page(name))
    cells = stored_outputs(lab.notebook_dir / name)["cells"]
    seen: dict = {}

    def opened():
        seen.update(page_state(driver))
        return seen if seen.get("cells") == cells and seen.get("kernel") == "Idle" else None

    try:
        state = wait_for(opened, timeout, f"{name} to open with an idle kernel")
    except TimeoutError as error:
        raise TimeoutError(
            f"{error}: {cells} cells stored, last seen {seen.get('cells')} drawn, "
            f"kernel {seen.get('kernel')!r}, dialogs {seen.get('dialogs')}"
        ) from None
    time.sleep(2)  # the kernel's info (language_info) arrives just after it turns idle
    toasts = driver.execute_script(
        "return [...document.querySelectorAll('.Toastify__toast')].map(t => t.textContent);"
    )
    assert not [t for t in toasts if "news" in t.lower()], f"a news popup over {name}: {toasts}"
    return state


def scroll_to(driver, css: str, index: int = 0) -> None:
    """Scroll the ``index``-th element matching ``css`` into the middle of the window."""
    # Twice: cells off screen have estimated heights until drawn, so the first scroll may
    # land short of the element once the cells it passed are laid out.
    for _ in range(2):
        driver.execute_script(
            "const e = document.querySelectorAll(arguments[0])[arguments[1]];"
            "if (e) e.scrollIntoView({block: 'center'});",
            css,
            index,
        )
        time.sleep(1)


def menu(driver, top: str, command: str) -> None:
    """Click ``top`` in the menu bar, then the item that runs JupyterLab command ``command``."""
    from selenium.webdriver.common.by import By

    for item in driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item"):
        if item.text.strip() == top:
            item.click()
            break
    else:
        raise LookupError(f"no {top!r} menu")
    wait_for(
        lambda: driver.find_elements(By.CSS_SELECTOR, f'.lm-Menu-item[data-command="{command}"]'),
        10,
        f"the {command} menu item",
    )[0].click()
