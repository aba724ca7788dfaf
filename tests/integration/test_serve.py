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


def _url(line: str) -> str:
    """The page's URL in the line ``rmtsweep serve`` prints, its token included."""
    found = re.search(r"http://\S+", line)
    assert found, line
    return found.group(0)


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
        first = browser.open(_url(line),
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
        again = browser.open(f"http://127.0.0.1:{port}/",           # a new session, the token in its cookie
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


def _scripted_watch(monkeypatch):
    """A page's watch of a store of 12 tasks whose done count and clock the test sets: ``(watch, script, now)``."""
    import numpy as np

    from rmtsweep.analysis import live
    from rmtsweep.store import StoreStatus
    script = {"done": 2}
    monkeypatch.setattr(live, "status", lambda path: StoreStatus(script["done"], 12, 2 * script["done"], 24, {},
                                                                 {"sweep_name": "s"}, None))
    monkeypatch.setattr(live, "open_group", lambda path: {"done": np.arange(12) < script["done"]})
    now = [0.0]
    return live.Watch("store", clock=lambda: now[0]), script, now


def test_rate_and_time_left_come_from_the_tasks_seen_landing(monkeypatch):
    watch, script, now = _scripted_watch(monkeypatch)
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


@pytest.mark.parametrize("stall, expected", [(60.0, "no task landed in the last 1 min 20 s"),
                                             (120.0, "1.2 tasks/min, about 6 min 40 s left")])
def test_the_stall_the_page_waits_for_is_a_setting(monkeypatch, stall, expected):
    """``rmtsweep.serve.stall``: 80 s without a task after one landed every 10 s is a stall past 60 s; past 120 s it is
    not, and the rate over the 100 s watched (2 tasks) gives the time left for the other 8."""
    import dask

    watch, script, now = _scripted_watch(monkeypatch)
    with dask.config.set({"rmtsweep.serve.stall": stall}):
        watch.poll()
        now[0], script["done"] = 20.0, 4                     # 2 tasks in 20 s
        watch.poll()
        now[0] = 100.0                                       # then quiet for 80 s
        assert watch.poll().speed() == expected


def test_maps_say_why_they_are_empty(tiny_store):
    from rmtsweep.analysis.live import default_axes, live_map, map_variables
    from rmtsweep.store import open_store

    ds = open_store(tiny_store).load()
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
    from rmtsweep.store import locate, open_store

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
        maps = [live_map(open_store(p), "detection_rate", "snr", "gamma", {}) for p in (url, tiny_store)]
        assert maps[0].summary == maps[1].summary and maps[0].figure is not None

        objects = fs.find("rmtsweep-serve/tiny.zarr", detail=True)
        port = _free_port()
        server = subprocess.Popen(_command("serve", "s3://rmtsweep-serve/tiny.zarr", "--storage-option",
                                           f"endpoint_url={endpoint}", "--port", str(port)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = server.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in line, line + server.stderr.read()
        with urllib.request.urlopen(_url(line), timeout=120) as page:                  # the page is built here
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
        first = browser.open(_url(line), lambda st: len(_titles(st)) == 2)
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


# ``rmtsweep serve`` with its store readings counted: the functions that read the store or compare are wrapped,
# and the counts are printed to standard error when the server stops.
COUNTED = r'''
import atexit, json, sys, threading
import rmtsweep.store as store
from rmtsweep.analysis import live
counts = {"status": 0, "open": 0, "compare": 0}
lock = threading.Lock()
def counted(name, fn):
    def wrapper(*args, **kwargs):
        with lock:
            counts[name] += 1
        return fn(*args, **kwargs)
    return wrapper
live.status = counted("status", live.status)
live.compare = counted("compare", live.compare)
store.open_store = counted("open", store.open_store)
try:
    from rmtsweep.analysis import live_feed
    live_feed.open_store = store.open_store
except ImportError:
    pass
atexit.register(lambda: print("COUNTS " + json.dumps(counts), file=sys.stderr, flush=True))
from rmtsweep.cli import main
main(sys.argv[1:])
'''


def _serving(*args: str, counted: bool = False) -> tuple[subprocess.Popen, str]:
    """``rmtsweep serve ARGS --port 0`` started, and the URL it printed."""
    head = [sys.executable, "-c", COUNTED] if counted else _command()
    server = subprocess.Popen([*head, "serve", *args, "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    if "http://" not in line:
        server.kill()
        pytest.fail(line + server.communicate(timeout=60)[1])
    return server, _url(line)


def _stopped(server: subprocess.Popen) -> str:
    """Stop the server with Ctrl-C; its standard error."""
    server.send_signal(signal.SIGINT)
    _, err = server.communicate(timeout=120)
    assert server.returncode == 130, err
    return err


def _status(url: str, opener=None) -> int:
    """The HTTP status of a GET of ``url``."""
    import urllib.error
    try:
        with (opener or urllib.request.build_opener()).open(url, timeout=300) as page:
            page.read()
            return page.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _page_texts(url: str, timeout: float = 180) -> str:
    """The texts of the page at ``url`` (its token included) as a reader sees them: a session pulled over the
    page's websocket, as bokeh's own client does, its HTML panes without their tags."""
    import threading

    import panel  # noqa: F401  (registers the page's models for the client)
    from bokeh.client import pull_session
    from urllib.parse import parse_qsl

    base, _, query = url.partition("?")
    got: list[str] = []

    def pull() -> None:              # bokeh's client waits for ever on a session the server cannot make
        with pull_session(url=base, arguments=dict(parse_qsl(query))) as session:
            got.extend(m.text for m in session.document.models if isinstance(getattr(m, "text", None), str))
        got.append("")

    puller = threading.Thread(target=pull, daemon=True)
    puller.start()
    puller.join(timeout)
    assert got, f"no page from {base} in {timeout} s"
    return " ".join(re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", html.unescape(html.unescape(t)))) for t in got)


def test_the_store_is_read_once_a_refresh_whatever_the_readers(tiny_store):
    """Eight readers fetch the page at once, twice each: the store is read once an interval and compared once
    in all (the store is complete), not once a page."""
    import threading

    interval, clients = 1.0, 8
    server, url = _serving(str(tiny_store), "--interval", str(interval), counted=True)
    started = time.monotonic()
    codes: list[int] = []
    try:
        def reader() -> None:
            for _ in range(2):
                codes.append(_status(url))
        threads = [threading.Thread(target=reader) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
    finally:
        served = time.monotonic() - started
        err = _stopped(server)
    assert codes == [200] * (2 * clients), codes
    counts = json.loads(next(line for line in err.splitlines() if line.startswith("COUNTS "))[7:])
    # one reading of the done flags at the start, then at most one an interval; the store opened and compared
    # when its done flags change (once here: it is complete), not for each of the 16 pages
    assert counts["status"] <= served / interval + 2, (counts, served)
    assert counts["open"] <= 2 and counts["compare"] <= 2, counts


def test_the_maps_of_a_selection_are_drawn_once_for_every_reader(tiny_store, monkeypatch):
    """Sessions that ask at once for the maps of the same selection share one computation."""
    from concurrent.futures import ThreadPoolExecutor

    from rmtsweep.analysis import live
    from rmtsweep.analysis.live_feed import Feed
    calls = []
    real = live.compare
    monkeypatch.setattr(live, "compare", lambda ds: calls.append(1) or real(ds))
    feed = Feed(live.Watch(tiny_store))
    snap = feed.read(strict=True)
    calls.clear()
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: feed.maps(snap, ("detection_rate", "overlap"), "snr", "gamma",
                                                {"delta": "1.0", "weights": "optimal"}), range(8)))
    assert len(calls) == 1                          # the detection rate's comparison; overlap is the store's own
    assert all(m == got[0] for m in got) and got[0][0].summary.startswith("detection_rate: 8 of 8 cells")
    assert "delta=1" in got[0][0].figure.title


def test_the_page_needs_the_token_of_its_url(tiny_store):
    """The URL printed holds a token: without it, or with another, the page and its websocket answer 403, also
    to another user of the machine; the cookie the first page sets serves a reload. ``--no-token`` opts out."""
    import http.cookiejar
    import urllib.request

    server, url = _serving(str(tiny_store))
    base = url.split("?")[0]
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]{40,}", url), url
        jar = http.cookiejar.CookieJar()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        assert _status(url, browser) == 200
        assert _status(base, browser) == 200                      # the cookie the first page set
        assert _status(base) == 403
        assert _status(base + "?token=" + "x" * 43) == 403
        assert _status(base + "ws") == 403                        # the page's websocket
        assert _status(base + "autoload.js?bokeh-autoload-element=x") == 403     # the page, embedded elsewhere
        assert _status(url.replace("token=", "token=x")) == 403
        if _as_nobody():
            probe = ("import sys, urllib.request, urllib.error\n"
                     "for u in sys.argv[1:]:\n"
                     "    try:\n        print(urllib.request.urlopen(u, timeout=120).status)\n"
                     "    except urllib.error.HTTPError as e:\n        print(e.code)\n")
            got = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-c", probe, base,
                                  base + "ws"], capture_output=True, text=True, timeout=300, cwd="/")
            assert got.stdout.split() == ["403", "403"], got.stdout + got.stderr
    finally:
        _stopped(server)

    server, url = _serving(str(tiny_store), "--no-token")
    try:
        assert "token" not in url and _status(url) == 200
    finally:
        err = _stopped(server)
    assert "--no-token: anyone who can reach the port can read this page" in err, err
    if not _as_nobody():
        pytest.skip("needs root, runuser and /usr/bin/python3 to fetch as the user nobody; the rest passed")


def _as_nobody() -> bool:
    """Whether this test can act as the user ``nobody`` (root, ``runuser`` and the system's Python)."""
    import shutil
    if os.geteuid() != 0 or not shutil.which("runuser") or not os.access("/usr/bin/python3", os.X_OK):
        return False
    return subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-c", "pass"],
                          capture_output=True).returncode == 0


def test_a_store_deleted_while_served_is_one_line(tiny_store, tmp_path):
    """The page says the store is gone in one line, and the server's log says so once, with no traceback."""
    import shutil

    store = tmp_path / "deleted.zarr"
    shutil.copytree(tiny_store, store)
    server, url = _serving(str(store), "--interval", "0.5")
    try:
        assert re.search(r"\d+ / \d+ tasks", _page_texts(url))
        shutil.rmtree(store)
        gone = f"the store {store} is gone: does not exist"
        _wait(lambda: gone in _page_texts(url), 120, step=0.5)
        for _ in range(3):                                   # new sessions, several readings later
            text = _page_texts(url)
            assert text.count(gone) == 1 and "tasks" in text, text      # the counts of the last reading stay
        time.sleep(1.5)                                      # a few more readings of a store still gone
    finally:
        err = _stopped(server)
    assert "Traceback" not in err, err
    said = [line for line in err.splitlines() if str(store) in line]
    assert said.count(f"rmtsweep: {gone}") == 1, err
    # a reading made while the files were being removed can fail otherwise first: a line for that too, then this
    assert said[-1] == f"rmtsweep: {gone}" and len(said) <= 2, err


def test_a_store_waiting_for_its_theory_says_so_and_maps_what_it_has(tiny_store, tmp_path):
    """A run in progress: the theory at the store's size is pending. The head says so, the detection rate waits,
    the store's own observables map; once the theory is written, the next reading draws the detection rate."""
    import shutil

    import zarr

    from rmtsweep.analysis import live
    from rmtsweep.analysis.live_feed import Feed
    from rmtsweep.analysis.live_page import _header
    from rmtsweep.store import consolidate, locate

    store = tmp_path / "pending.zarr"
    shutil.copytree(tiny_store, store)

    def flag(pending: bool) -> None:
        group = zarr.open_group(str(store), mode="r+")
        if pending:
            group.attrs["theory_pending"] = True
        else:
            del group.attrs["theory_pending"]
        consolidate(locate(store))

    flag(True)
    feed = Feed(live.Watch(store))
    snap = feed.read(strict=True)
    assert snap.progress.theory_pending
    head = html.unescape(re.sub(r"<[^>]*>", " ", _header(str(store), snap.progress, 5.0)))
    assert "theory at the store's size: pending" in head and "2 / 2 tasks" in head
    detection, overlap = feed.maps(snap, ("detection_rate", "overlap"), *snap.default, {})
    assert detection.figure is None and "theory arrays are not written yet" in detection.summary
    assert overlap.figure is not None and overlap.summary.startswith("overlap: ")
    assert not any(v.startswith("theory") or v.endswith("_theory") for v in snap.variables), snap.variables

    flag(False)
    later = feed.read()
    assert later.key != snap.key and not later.progress.theory_pending
    assert "theory at the store's size" not in html.unescape(_header(str(store), later.progress, 5.0))
    detection, _ = feed.maps(later, ("detection_rate", "overlap"), *later.default, {})
    assert detection.figure is not None and detection.summary.startswith("detection_rate: ")
    assert len(later.variables) > len(snap.variables)          # the comparison's variables join the menu
