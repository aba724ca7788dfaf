"""``rmtsweep serve``: the live page of a store, watched in headless Chromium while a run fills the store.

Chromium is driven through its DevTools protocol (a websocket, through tornado's client): the page is a
bokeh document filled over a websocket, which ``--dump-dom`` and ``--screenshot`` do not wait for. What the
test reads is the document's models: the page's texts (the ``N / M tasks`` head) and the maps' data.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.helpers import MEDIUM, chromium, run_main

# A medium sweep at d = 800: a task takes long enough on one worker thread that the page sees tasks land
SLOW = {**MEDIUM, "name": "slow", "d": 800}
STATE = r"""(() => {
  const out = {texts: [], maps: {}};
  for (const doc of (window.Bokeh ? Bokeh.documents : [])) {
    const models = doc.all_models instanceof Map ? doc.all_models.values() : doc.all_models;
    for (const m of models) {
      if (typeof m.text === "string") out.texts.push(m.text);
      if (m.data === undefined || m.data === null) continue;
      const data = m.data instanceof Map ? Object.fromEntries(m.data) : m.data;
      const id = parseInt(String(m.id).replace(/\D/g, ""));
      for (const [key, column] of Object.entries(data)) {
        if (["detection_rate", "overlap"].includes(key) && !(out.maps[key] && out.maps[key].id > id)) {
          const values = Array.from(column).filter(Number.isFinite);
          out.maps[key] = {id: id, n: values.length, sum: values.reduce((a, b) => a + b, 0)};
        }
      }
    }
  }
  return JSON.stringify(out);
})()"""


CHOOSE = """(() => {
  for (const doc of Bokeh.documents) {
    const models = doc.all_models instanceof Map ? doc.all_models.values() : doc.all_models;
    for (const m of models) if (m.title === %s && m.options !== undefined) { m.value = %s; return true; }
  }
  return false;
})()"""


class Browser:
    """Headless Chromium with one page, driven over the DevTools protocol."""

    def __init__(self, profile: Path, size: tuple[int, int] = (1280, 1000)) -> None:
        self.proc = subprocess.Popen([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                                      "--disable-background-networking", "--disable-component-update",
                                      "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
                                      "--hide-scrollbars", "--remote-debugging-port=0", f"--user-data-dir={profile}",
                                      "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        marker = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text().strip()):
            assert time.monotonic() < deadline and self.proc.poll() is None, "chromium did not start"
            time.sleep(0.2)
        port = int(marker.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self.loop = asyncio.new_event_loop()
        self.ids = 0
        from tornado.websocket import websocket_connect

        async def connect():
            return await websocket_connect(page["webSocketDebuggerUrl"], max_message_size=2**28)
        self.ws = self.loop.run_until_complete(connect())
        self.call("Emulation.setDeviceMetricsOverride", width=size[0], height=size[1], deviceScaleFactor=1,
                  mobile=False)

    def call(self, method: str, **params) -> dict:
        async def go() -> dict:
            self.ids += 1
            await self.ws.write_message(json.dumps({"id": self.ids, "method": method, "params": params}))
            while True:
                msg = json.loads(await self.ws.read_message())
                if msg.get("id") == self.ids:
                    assert "error" not in msg, msg
                    return msg["result"]
        return self.loop.run_until_complete(asyncio.wait_for(go(), 60))

    def state(self) -> dict:
        """The page's texts and, per map variable, how many finite values its data holds and their sum.

        A map redrawn is a new figure; the browser keeps the models of the old one, so the data read is that
        of the newest source (the server numbers its models in the order it makes them).
        """
        got = self.call("Runtime.evaluate", expression=STATE, returnByValue=True)
        st = json.loads(got["result"]["value"])
        st["texts"] = [re.sub(r"<[^>]*>", " ", html.unescape(t)).strip() for t in st["texts"]]   # what a reader sees
        return st

    def open(self, url: str, ready, timeout: float = 90) -> dict:
        """Go to ``url`` and wait until ``ready(state)``; the state then."""
        self.call("Page.navigate", url=url)
        return self.wait(ready, timeout)

    def wait(self, ready, timeout: float = 90) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            st = self.state()
            if ready(st) or time.monotonic() > deadline:
                return st
            time.sleep(0.5)

    def choose(self, widget: str, value: str) -> None:
        """Set the menu titled ``widget`` to ``value``, as a reader would."""
        got = self.call("Runtime.evaluate", expression=CHOOSE % (json.dumps(widget), json.dumps(value)),
                        returnByValue=True)
        assert got["result"]["value"] is True, f"no menu {widget!r} on the page"

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return path

    def close(self) -> None:
        self.ws.close()
        self.loop.close()
        self.proc.terminate()
        self.proc.wait(30)


def _count(st: dict) -> tuple[int, int] | None:
    """``(N, M)`` of the ``N / M tasks`` the page shows, or None before it shows one."""
    for text in st["texts"]:
        if m := re.search(r"(\d+) / (\d+) tasks", text):
            return int(m.group(1)), int(m.group(2))
    return None


def _values(st: dict) -> tuple | None:
    """The overlap map's data as the page holds it: how many cells have a value, and their sum."""
    got = st["maps"].get("overlap")
    return None if got is None else (got["n"], got["sum"])


def _summary(st: dict, var: str) -> str | None:
    """The line under the map of ``var``, e.g. ``overlap: 6 of 6 cells with a value, mean 0.44, ...``."""
    return next((t for t in st["texts"] if re.search(rf"\b{var}: ", t)), None)


def _titles(st: dict) -> list[str]:
    """The titles of the detection-rate and overlap maps (those of replaced figures too)."""
    return [t for t in st["texts"] if t.startswith(("detection_rate, ", "overlap (k=1)"))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net shows them) with a socket listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.rsplit(":", 1)
            if state == "0A" and int(hexport, 16) == port:
                found.append(addr)
    return found


def _tasks_done(store: Path) -> int:
    from rmtsweep.store import is_store, tasks_done
    return tasks_done(store)[0] if is_store(store) else 0


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "rmtsweep.cli", *args]


def _wait(what, timeout: float, step: float = 0.3):
    deadline = time.monotonic() + timeout
    while not (got := what()):
        assert time.monotonic() < deadline, f"timed out after {timeout} s"
        time.sleep(step)
    return got


@pytest.mark.requires_chromium
@pytest.mark.slow
def test_the_page_follows_a_run(tmp_path):
    sweep, store, port = tmp_path / "slow.yaml", tmp_path / "slow.zarr", _free_port()
    sweep.write_text(yaml.safe_dump(SLOW))
    env = {**os.environ, "RMTSWEEP_DASHBOARD_ADDRESS": "none"}
    run = subprocess.Popen(_command("run", str(sweep), "--store", str(store), "--workers", "1", "--in-process"),
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    server = browser = None
    try:
        _wait(lambda: _tasks_done(store) >= 1 or run.poll() is not None, 180)
        server = subprocess.Popen(_command("serve", str(store), "--port", str(port), "--interval", "1"),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = server.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in line, line + server.stderr.read()
        assert _listening(port) and set(_listening(port)) == {"0100007F"}, _listening(port)   # 127.0.0.1 only
        browser = Browser(tmp_path / "profile")
        first = browser.open(f"http://127.0.0.1:{port}/",
                             lambda st: _count(st) and "detection_rate" in st["maps"] and "overlap" in st["maps"])
        assert _count(first) and {"detection_rate", "overlap"} <= set(first["maps"]), first
        n1, total = _count(first)
        assert total == 64 and n1 < total, "the run ended before the page was read: make the sweep slower"
        time.sleep(1.5)                                                # the browser paints what it received
        browser.screenshot(tmp_path / "first.png")
        # the overlap map's values are means of continuous draws: a replicate more changes them (a detection rate
        # of 1 can stay 1)
        later = browser.wait(lambda st: (_count(st) or (0, 0))[0] >= n1 + 3 and _values(st) != _values(first), 120)
        n2, _ = _count(later)
        assert n2 > n1, (first, later)                                # the count grew, without a reload
        assert _values(later) != _values(first), (first, later)       # and the map's data changed
        assert _summary(later, "overlap") != _summary(first, "overlap")       # as the line under it says
        assert "detection_rate" in later["maps"]
        shot = browser.screenshot(tmp_path / "later.png")
        print(f"screenshots: {tmp_path / 'first.png'} {shot}")
        again = browser.open(f"http://127.0.0.1:{port}/",                  # a new session starts where it is
                             lambda st: (_count(st) or (0, 0))[0] >= n2 and "overlap" in st["maps"])
        assert (_count(again) or (0, 0))[0] >= n2, again
    finally:
        if browser is not None:
            browser.close()
        run.kill()
        run.wait(60)
        if server is not None:
            server.send_signal(signal.SIGINT)
            out, err = server.communicate(timeout=60)
    assert server.returncode == 130, err                      # Ctrl-C: the status of an interrupt, one line
    assert err.strip().splitlines() == ["rmtsweep: interrupted; the page is closed"], err


def test_not_a_store_is_one_line(tmp_path, capsys):
    code, out, err = run_main(["serve", str(tmp_path), "--port", "0"], capsys)
    assert code == 2 and not out
    assert err.strip().splitlines() == [f"rmtsweep: error: {tmp_path}: not an rmtsweep store "
                                        f"(no 'rmtsweep-store-1' marker)"], err


def test_a_port_in_use_is_one_line(tiny_store, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = run_main(["serve", str(tiny_store), "--port", str(port)], capsys)
    assert code == 2 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"rmtsweep: error: --host 127.0.0.1 --port {port}: cannot listen"), err


def test_the_websocket_is_accepted_only_from_the_address_served():
    from rmtsweep.analysis.live_page import origins, url_host
    assert origins("127.0.0.1", 5006) == ["127.0.0.1:5006", "localhost:5006"]
    assert origins("10.1.2.3", 80) == ["10.1.2.3:80"]
    assert "127.0.0.1:8000" in origins("0.0.0.0", 8000)
    assert url_host("::1") == "[::1]" and url_host("127.0.0.1") == "127.0.0.1"


def test_rate_and_time_left_come_from_the_tasks_seen_landing(monkeypatch):
    import numpy as np

    from rmtsweep.analysis import live
    script = {"done": 2}
    from rmtsweep.store import StoreStatus
    monkeypatch.setattr(live, "status", lambda path: StoreStatus(script["done"], 12, 2 * script["done"], 24, {},
                                                                 {"sweep_name": "s"}, None))
    monkeypatch.setattr(live, "open_group", lambda path: {"done": np.arange(12) < script["done"]})
    now = [0.0]
    watch = live.Watch("store", clock=lambda: now[0])
    first = watch.poll()
    assert (first.count(), first.rate, first.eta) == ("2 / 12 tasks", None, None)
    assert first.speed() == "rate: measuring (from the tasks that land while the page watches)"
    now[0], script["done"] = 20.0, 6                         # 4 tasks in 20 s: 12 a minute, 6 left: 30 s
    second = watch.poll()
    assert second.rate == pytest.approx(0.2) and second.eta == pytest.approx(30.0)
    assert second.speed() == "12 tasks/min, about 30 s left" and second.digest != first.digest
    now[0] = 40.0                                            # quiet for 20 s: a gap as seen before, still an ETA
    assert watch.poll().eta == pytest.approx(6 / 0.1)
    now[0] = 100.0                                           # quiet for 80 s > 3 x 5 s and > 30 s: stalled
    stalled = watch.poll()
    assert stalled.eta is None and stalled.speed() == "no task landed in the last 1 min 20 s"
    now[0], script["done"] = 110.0, 12
    assert watch.poll().speed() == "complete"


def test_maps_say_why_they_are_empty(tiny_store):
    from rmtsweep.analysis.live import default_axes, live_map, map_variables
    from rmtsweep.store import open_dataset

    ds = open_dataset(tiny_store).load()
    assert default_axes(ds) == ("snr", "delta")
    names = map_variables(ds)
    assert names[0] == "detection_rate" and {"overlap", "lambda1_z", "overlap_mean"} <= set(names)
    drawn = live_map(ds, "detection_rate", "snr", "gamma", {"delta": "1.0", "weights": "optimal"})
    assert drawn.figure is not None and drawn.figure.title.startswith("detection_rate")
    assert "delta=1" in drawn.figure.title and "weights=optimal" in drawn.figure.title
    assert drawn.summary.startswith("detection_rate: 8 of 8 cells with a value, mean ")

    none_done = ds.assign(done=ds["done"] & False)
    empty = live_map(none_done, "overlap", "snr", "gamma", {})
    assert empty.figure is None and "no replicate done yet" in empty.summary

    theory = [v for v in ds.data_vars if str(v).startswith("theory_") and ds[v].dtype.kind == "f"]
    unwritten = ds.assign({v: ds[v].where(False) for v in theory})
    pending = live_map(unwritten, "detection_rate", "snr", "gamma", {})
    assert pending.figure is None and "theory arrays are not written yet" in pending.summary
    assert live_map(unwritten, "overlap", "snr", "gamma", {}).figure is not None     # the Monte Carlo still maps
    absent = ds.drop_vars([v for v in ds.data_vars if str(v).startswith("theory_")])
    assert live_map(absent, "overlap", "snr", "gamma", {}).figure is not None
    assert map_variables(absent)[0] == "detection_rate"


def test_a_store_in_a_bucket_is_served_as_on_disk(tiny_store, monkeypatch):
    """The page of a store at an s3:// URL (moto's S3 server on loopback) reads what the disk's would."""
    s3fs = pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    from rmtsweep.analysis.live import Watch, live_map
    from rmtsweep.store import locate, open_dataset

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")              # no lookup of real credentials by botocore
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    moto = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    server = None
    try:
        endpoint = "http://{}:{}".format(*moto.get_host_and_port())
        fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
        fs.mkdir("rmtsweep-serve")          # moto's buckets are one set per process: a name of this test's own
        fs.put(str(tiny_store), "rmtsweep-serve/tiny.zarr", recursive=True)
        url = locate("s3://rmtsweep-serve/tiny.zarr", {"endpoint_url": endpoint})
        there, here = Watch(url).poll(), Watch(tiny_store).poll()
        assert (there.count(), there.digest) == (here.count(), here.digest)
        maps = [live_map(open_dataset(p), "detection_rate", "snr", "gamma", {}) for p in (url, tiny_store)]
        assert maps[0].summary == maps[1].summary and maps[0].figure is not None

        objects = fs.find("rmtsweep-serve/tiny.zarr", detail=True)
        port = _free_port()
        server = subprocess.Popen(_command("serve", "s3://rmtsweep-serve/tiny.zarr", "--storage-option",
                                           f"endpoint_url={endpoint}", "--port", str(port)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = server.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in line, line + server.stderr.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=120) as page:   # the page is built here
            assert page.status == 200 and "bokeh" in page.read().decode().lower()
        time.sleep(3)                                   # a reading of the store or two
        after = fs.find("rmtsweep-serve/tiny.zarr", detail=True)
        assert {k: v["ETag"] for k, v in after.items()} == {k: v["ETag"] for k, v in objects.items()}   # read only
    finally:
        if server is not None:
            server.send_signal(signal.SIGINT)
            server.communicate(timeout=60)
        moto.stop()
    assert server.returncode == 130


@pytest.mark.requires_chromium
def test_the_menus_choose_the_axes_and_the_values_shown(tiny_store, tmp_path):
    port = _free_port()
    server = subprocess.Popen(_command("serve", str(tiny_store), "--port", str(port)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    browser = None
    try:
        line = server.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in line, line + server.stderr.read()
        browser = Browser(tmp_path / "profile")
        first = browser.open(f"http://127.0.0.1:{port}/", lambda st: len(_titles(st)) == 2)
        assert all("gamma=0.5" in t for t in _titles(first)), _titles(first)       # snr across, delta up
        browser.choose("up", "gamma")                                          # now delta is a menu
        moved = browser.wait(lambda st: any("delta=0.5" in t for t in _titles(st)), 60)
        assert any("delta=0.5" in t for t in _titles(moved)), _titles(moved)
        browser.choose("delta", "1.0")
        browser.choose("second map", "lambda1_z")
        shown = browser.wait(lambda st: any(t.startswith("lambda1_z") for t in st["texts"])
                             and "delta=1," in " ".join(st["texts"]) and _summary(st, "lambda1_z"), 60)
        text = " ".join(shown["texts"])
        assert "lambda1_z (k=1)" in text and "delta=1," in text and "complete" in text, shown["texts"]
        assert _summary(shown, "lambda1_z").startswith("lambda1_z: 8 of 8 cells with a value")
        browser.screenshot(tmp_path / "menus.png")
    finally:
        if browser is not None:
            browser.close()
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=60)
    assert server.returncode == 130, err
