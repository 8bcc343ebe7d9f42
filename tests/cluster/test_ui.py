"""The live page in a real browser: `tau-demo ui` serves the success scenario while it runs on the session's
cluster, and headless Chromium (Debian's chromium + chromium-driver, driven by Selenium) watches it.

One test, one run of the success scenario: the two node lanes appear while the Job is still in Pod
scheduling (screenshot saved as $TAU_DEMO_STATE/artifacts/ui-mid-run.png), each within a second of the
recorder writing it; a second browser and a reload show the same state; the page ends showing Succeeded;
the finished run replays with the time slider; the kube-apiserver killed and started again underneath
the page is shown, and the page resumes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service

from demo.cluster import backends
from demo.timeline import log as event_log
from scenarios.walkthrough import success
from scenarios.kit.recorder import Recorder
from tests.cluster.conftest import BACKEND, NAME

REPO = Path(__file__).resolve().parents[2]
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
# without the background-networking flags Chromium keeps calling home, which this closed network refuses
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1500,720")
PUSH_BOUND = 1.0       # the promise: updates arrive within a second of the event being written
SHOT_AFTER = 6         # s into the nodes' 15s boot: the screenshot shows them booting while the pods wait

# What the page shows, read from its DOM (the data-* attributes app.js writes for this).
PAGE = """
const rows = [...document.querySelectorAll('#lanes .row[data-lane]')];
const phase = (n) => document.querySelector(`.phase[data-phase="${n}"]`);
return {
  label: document.getElementById('subtitle').textContent,
  title: document.getElementById('title').textContent,
  lanes: rows.map((r) => [r.dataset.lane, r.dataset.state]),
  nodes: rows.filter((r) => r.dataset.of === 'Nodes' && r.dataset.state !== 'gone').map((r) => r.dataset.lane),
  node_states: rows.filter((r) => r.dataset.of === 'Nodes').map((r) => r.dataset.state),
  phases: [...document.querySelectorAll('.phase')].map((p) => [p.dataset.phase, p.dataset.state]),
  scheduling: phase('Pod scheduling') ? phase('Pod scheduling').dataset.state : null,
  running: phase('Running') ? phase('Running').querySelector('.detail').textContent : null,
  details: Object.fromEntries([...document.querySelectorAll('.phase')].map((p) => [p.dataset.phase, p.querySelector('.detail').textContent])),
  over: document.getElementById('phases').dataset.over,
  outcome: document.body.dataset.outcome,
  cluster: document.body.dataset.cluster,
  banner: document.getElementById('cluster').textContent,
  logs: rows.map((r) => Number(r.querySelector('.logs').dataset.lines || 0)).reduce((a, b) => a + b, 0),
  seen: window.tauSeen || {},
};
"""


@contextmanager
def browser(profile: Path):
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: ./test.sh's toolchain step installs Debian's chromium and "
                    "chromium-driver (apt-get install chromium chromium-driver)", pytrace=False)
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    os.environ.setdefault("SE_OFFLINE", "true")      # Selenium Manager: never look for a driver to download
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


@contextmanager
def tau_demo_ui(runs: Path):
    """`tau-demo ui --runs RUNS` as a user starts it; its address from the line it prints."""
    p = subprocess.Popen([sys.executable, "-m", "cli", "ui", "--runs", str(runs)], cwd=REPO, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(p.stdout.readline()), daemon=True)
    reader.start()
    reader.join(30)
    try:
        assert first and first[0].startswith("tau-demo ui: http://127.0.0.1:"), f"tau-demo ui printed {first!r}"
        yield first[0].split()[2]
    finally:
        p.terminate()
        assert p.wait(15) == 0, "tau-demo ui stops cleanly on SIGTERM"


def page(driver) -> dict:
    return driver.execute_script(PAGE)


def wait_page(driver, pred, timeout: float, what: str, running: Future | None = None) -> dict:
    """Poll the page until pred(state); fail saying what it last showed (or why the scenario ended first)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = page(driver)
        except WebDriverException:        # e.g. between a reload and the page's first script
            last = None
        if last is not None and pred(last):
            return last
        if running is not None and running.done():
            running.result()              # the scenario raised: report that
            raise AssertionError(f"the scenario ended before the page showed {what}; it showed {last}")
        time.sleep(0.2)
    raise AssertionError(f"the page did not show {what} within {timeout:.0f}s; it showed {last}")


def shown(state: dict) -> tuple:
    return tuple(map(tuple, state["lanes"])), tuple(map(tuple, state["phases"])), state["outcome"]


def run_success(ctx) -> list[str]:
    ctx.checks.clear()
    success.run(ctx)
    return [c.what for c in ctx.checks if not c.ok] + ([] if ctx.checks else ["no checks ran"])


@pytest.mark.apiserver_down
def test_the_live_page_follows_the_success_scenario_in_a_real_browser(clean, tmp_path):
    t_start = time.monotonic()
    runs = clean.runs_dir
    artifacts = Path(os.environ["TAU_DEMO_STATE"]) / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    with tau_demo_ui(runs) as url, browser(tmp_path / "a") as a, ThreadPoolExecutor(2) as pool:
        a.get(url)
        wait_page(a, lambda s: s["title"], 20, "its title")
        scenario = pool.submit(run_success, clean)

        # while the Job waits in Pod scheduling for its two booting nodes
        mid = wait_page(a, lambda s: len(s["nodes"]) == 2 and s["scheduling"] == "active", 180,
                        "two node lanes while the Job is still in Pod scheduling", scenario)
        assert mid["title"] == success.TITLE
        assert set(mid["node_states"]) <= {"booting", "Ready"}
        # the picture a few seconds into the nodes' boot (the fake's VMs take 15s), still in Pod scheduling
        shot = wait_page(a, lambda s: time.time() - min(s["seen"][n] for n in s["nodes"]) >= SHOT_AFTER, 30,
                         f"the nodes booting for {SHOT_AFTER}s", scenario)
        a.save_screenshot(str(artifacts / "ui-mid-run.png"))
        assert shot["scheduling"] == "active" and set(shot["node_states"]) == {"booting"}, shot
        log_path = max(runs.glob("*/success.jsonl"), key=lambda p: p.stat().st_mtime)
        written = {e["lane"]: e["t"] for e in reversed(event_log.read(log_path)) if "lane" in e}
        late = {lane: round(mid["seen"][lane] - written[lane], 3) for lane in mid["nodes"]}
        print(f"\n[ui] node lanes shown {late} s after the recorder wrote them")
        assert all(d <= PUSH_BOUND for d in late.values()), f"pushed within {PUSH_BOUND}s: {late}"

        # a second browser, and the first one reloaded, show the same state (from the server, not the tab)
        with browser(tmp_path / "b") as b:
            b.get(url)
            deadline = time.monotonic() + 15
            while True:
                sa, sb = page(a), page(b)
                if sa["lanes"] and shown(sa) == shown(sb):
                    break
                assert time.monotonic() < deadline, f"two browsers disagree: {shown(sa)} vs {shown(sb)}"
                time.sleep(0.2)
        a.refresh()
        wait_page(a, lambda s: len(s["lanes"]) >= len(mid["lanes"]), 15, "the same lanes after a reload")

        failed = scenario.result(timeout=600)
        assert not failed, f"the success scenario's checks failed: {failed}"
        end = wait_page(a, lambda s: s["outcome"] == "succeeded", 15, "the Job Succeeded")
        assert end["running"].startswith("Succeeded (2/2 completions)"), end["running"]
        assert dict(end["phases"]) == {"Submitted": "done", "Quota reserved": "done", "Capacity provisioning": "done",
                                       "Pod scheduling": "done", "Running": "done"}
        # the cards say what the run reached (both nodes booked, both pods scheduled), not what its teardown left
        end = wait_page(a, lambda s: s["over"] == "run", 60, "the phases over the run once it has ended")
        assert end["details"]["Capacity provisioning"].startswith("capacity booked on 2 node(s)"), end["details"]
        assert end["details"]["Pod scheduling"].startswith("2/2 on "), end["details"]
        assert end["logs"] > 0, "the controllers' log lines about the Job's objects are beside their lanes"

        # the finished run, replayed: the slider at a moment the nodes were booting shows that moment again
        run_id = f"{log_path.parent.name}/success"
        events = event_log.read(log_path)
        booting = min(e["t"] for e in events if e.get("of") == "Nodes" and e["state"] == "booting")
        a.get(f"{url}?run={run_id}")
        wait_page(a, lambda s: s["outcome"] == "succeeded", 15, "the replayed run at its end")
        a.execute_script("const s = document.getElementById('slider'); s.value = arguments[0];"
                         "s.dispatchEvent(new Event('input'));", booting + 0.5)
        then = wait_page(a, lambda s: s["scheduling"] == "active" and len(s["nodes"]) == 2, 15,
                         "the replay at the nodes' boot: Pod scheduling, two booting nodes")
        assert set(then["node_states"]) == {"booting"} and then["outcome"] == "waiting"

        # the kube-apiserver killed and started again underneath the page
        restart_log, _ = clean.event_log("apiserver-restart")
        with Recorder(clean, clean.new_name("job-ui"), restart_log):
            a.get(url)
            wait_page(a, lambda s: "apiserver-restart" in s["label"], 15, "the newest run (the restart's)")
            restarted = pool.submit(backends.get(BACKEND).restart, NAME, "kube-apiserver")
            down = wait_page(a, lambda s: s["cluster"] == "down", 60, "that the cluster does not answer")
            assert "does not answer" in down["banner"]
            restarted.result(timeout=120)
            up = wait_page(a, lambda s: s["cluster"] == "up" and "did not answer for" in s["banner"], 60,
                           "that the apiserver answers again and the page resumed")
            print(f"[ui] during the restart the page said: {down['banner']!r}; after: {up['banner']!r}")
        with urllib.request.urlopen(f"{url}api/view", timeout=5) as r:
            assert json.loads(r.read())["cluster"] == "up"
    print(f"[ui] the browser test took {time.monotonic() - t_start:.0f}s")
