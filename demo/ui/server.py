"""The HTTP server of the live page (aiohttp; Server-Sent Events through aiohttp-sse).

    GET /                    the page (static/index.html); ?run=<run>/<label> opens that log for replay
    GET /api/stream          Server-Sent Events: the live view now, then each time it changes
    GET /api/view?run=&at=   one log's view at time `at` (replay and its time slider); without run: the live one
    GET /api/runs            the event logs under the runs directory, newest first
    GET /fleet               the fleet runs' reports (runs/fleet/<run>/report.svg), newest first
    GET /fleet/<run>.svg     one fleet run's picture

The live view follows the newest event log under the runs directory (runs/<run>/<label>.jsonl, the
recorder's): every browser gets the same view from the server, so a reload or a second browser shows
the same state.  Nothing here talks to the cluster: the recorder writes when the apiserver stops and
starts answering, and the view says so.  Listens on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import re
import socket
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable

from aiohttp import web
from aiohttp_sse import sse_response

from ..timeline import board
from ..timeline import log as event_log

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
STATIC = Path(__file__).resolve().parent / "static"
POLL = 0.2                         # seconds between looks at the runs directory and the live log
RUN_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*/[A-Za-z0-9_][A-Za-z0-9._-]*$")
FLEET_RUN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
FLEET = "fleet"                    # fleet runs live in runs/fleet/<run>/ (`tau-demo fleet run`): not scenario logs


class PortInUse(OSError):
    """The port asked for is taken; the message says what to do."""


class BadRun(ValueError):
    """A run id that names no event log under the runs directory (or is not one)."""


Between = Callable[[asyncio.Event], Awaitable[None]]     # the wait between two polls (a test steps it: every_poll)
SHUTDOWN_TIMEOUT = 1.0         # seconds aiohttp waits for open requests as the server stops, then cancels them
CLOSED = "\0closed"            # pushed to every stream as the server stops (Live.close): the stream ends


# ---------------------------------------------------------------------------- the logs on disk

class Runs:
    """The event logs under a runs directory: runs/<run>/<label>.jsonl, named "<run>/<label>"."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._cache: dict[Path, tuple[tuple[float, int], list[dict]]] = {}

    def logs(self) -> list[Path]:
        return [p for p in self.root.glob("*/*.jsonl") if RUN_ID.match(self.id_of(p))]

    def id_of(self, path: Path) -> str:
        return f"{path.parent.name}/{path.stem}"

    def listing(self) -> list[dict]:
        out = []
        for p in self.logs():
            try:
                st = p.stat()
            except OSError:
                continue
            out.append({"id": self.id_of(p), "run": p.parent.name, "label": p.stem, "modified": round(st.st_mtime, 3),
                        "bytes": st.st_size})
        return sorted(out, key=lambda r: (r["modified"], r["id"]), reverse=True)

    def newest(self) -> Path | None:
        best = None
        for p in self.logs():
            try:
                key = (p.stat().st_mtime, str(p))
            except OSError:
                continue
            if best is None or key > best[0]:
                best = (key, p)
        return best[1] if best else None

    def path(self, run_id: str) -> Path:
        if not RUN_ID.match(run_id or ""):
            raise BadRun(f"{run_id!r} is not a run: expected <run>/<label>, as /api/runs lists them")
        p = self.root / f"{run_id}.jsonl"
        if not p.is_file():
            raise BadRun(f"no event log {run_id!r} under {self.root}")
        return p

    def events(self, run_id: str) -> list[dict]:
        """A log's events, read strictly (ValueError names a line that is not an event)."""
        p = self.path(run_id)
        st = p.stat()
        key = (st.st_mtime, st.st_size)
        hit = self._cache.get(p)
        if hit is None or hit[0] != key:
            hit = (key, event_log.read(p))
            self._cache = {p: hit}            # the log being replayed; a slider asks for it again and again
        return hit[1]


class Live:
    """Follows the newest event log and keeps its view; pushes each new view to every subscriber."""

    def __init__(self, runs: Runs):
        self.runs = runs
        self.current: Path | None = None
        self.tail: event_log.Tail | None = None
        self.events: list[dict] = []
        self.problems: list[str] = []
        self.view: dict = self._empty()
        self.text = json.dumps(self.view)
        self.subscribers: set[asyncio.Queue] = set()

    def _empty(self) -> dict:
        return {"label": "", "empty": True, "runs_dir": str(self.runs.root), "lanes": [], "markers": [],
                "outages": [], "phases": {"rows": []}, "problems": []}

    def poll(self) -> bool:
        """Look at the runs directory and the live log once; True when the view changed."""
        newest = self.runs.newest()
        changed = newest != self.current
        if changed:
            self.current, self.events, self.problems = newest, [], []
            self.tail = event_log.Tail(newest) if newest else None
        if self.tail is not None:
            new, problems, reset = self.tail.read_new()
            if reset:
                self.events, self.problems = [], []
            self.events += new
            self.problems = (self.problems + problems)[-20:]
            changed = changed or reset or bool(new or problems)
        if not changed:
            return False
        if self.current is None:
            view = self._empty()
        else:
            view = board.build(self.events, label=self.runs.id_of(self.current), problems=self.problems)
            view["mode"] = "live"
        text = json.dumps(view)
        if text == self.text:
            return False
        self.view, self.text = view, text
        return True

    def subscribe(self) -> asyncio.Queue:
        q: asyncio.Queue = asyncio.Queue(maxsize=1)
        self.subscribers.add(q)
        return q

    def publish(self, text: str | None = None) -> None:
        """Push the view to every browser (`None`: the server is stopping, so each stream ends now)."""
        for q in self.subscribers:
            if q.full():               # a slow browser gets the newest view, not a backlog
                q.get_nowait()
            q.put_nowait(self.text if text is None else text)

    def close(self) -> None:
        """End every stream at once, so that stopping the server does not wait out its shutdown timeout."""
        self.publish(CLOSED)

    async def follow(self, stop: asyncio.Event, between: Between | None = None) -> None:
        """Poll, push a changed view, then `between(stop)` (default: POLL seconds, or until stop), until stop."""
        between = between or every_poll
        while not stop.is_set():
            try:
                changed = await asyncio.to_thread(self.poll)
            except OSError as e:            # e.g. the runs directory removed under us: say so, go on
                log.warning("tau-demo ui: reading %s: %s", self.runs.root, e)
                changed = False
            if changed:
                self.publish()
            await between(stop)


async def every_poll(stop: asyncio.Event) -> None:
    """The live view's wait between two looks at the logs: POLL seconds, or until stop."""
    try:
        await asyncio.wait_for(stop.wait(), POLL)
    except asyncio.TimeoutError:
        pass


# ---------------------------------------------------------------------------- HTTP

LIVE = web.AppKey("live", Live)
RUNS_KEY = web.AppKey("runs", Runs)


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


async def stream(request: web.Request) -> web.StreamResponse:
    live = request.app[LIVE]
    q = live.subscribe()
    try:
        async with sse_response(request, ping_interval=5) as resp:
            await resp.send(live.text, event="view")
            while resp.is_connected():
                try:
                    text = await asyncio.wait_for(q.get(), 5)
                except asyncio.TimeoutError:       # nothing new: look whether the browser is still there
                    continue
                if text is CLOSED:                 # the server is stopping
                    break
                await resp.send(text, event="view")
    finally:
        live.subscribers.discard(q)
    return resp


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def view(request: web.Request) -> web.Response:
    run_id = request.query.get("run")
    if not run_id:
        return web.Response(text=request.app[LIVE].text, content_type="application/json")
    at_text = request.query.get("at")
    at: float | None = None
    if at_text:
        try:
            at = float(at_text)
        except ValueError:
            return _error(400, f"at={at_text!r} is not a time (seconds since the epoch)")
    runs = request.app[RUNS_KEY]
    try:
        events = await asyncio.to_thread(runs.events, run_id)
    except BadRun as e:
        return _error(404, str(e))
    except (ValueError, OSError) as e:
        return _error(422, f"{e}; it is not a tau-demo event log")
    out: dict[str, Any] = board.build(events, at=at, label=run_id)
    out["mode"] = "replay"
    return web.json_response(out)


async def runs_list(request: web.Request) -> web.Response:
    return web.json_response(await asyncio.to_thread(request.app[RUNS_KEY].listing))


def fleet_reports(root: Path) -> list[Path]:
    """The fleet runs with a picture under runs/fleet, newest first."""
    found = [p for p in (root / FLEET).glob("*/report.svg") if FLEET_RUN.match(p.parent.name)]
    return sorted(found, key=lambda p: (p.stat().st_mtime, p.parent.name), reverse=True)


async def fleet_page(request: web.Request) -> web.Response:
    reports = await asyncio.to_thread(fleet_reports, request.app[RUNS_KEY].root)
    items = "".join(f'<h2>{p.parent.name}</h2><img src="/fleet/{p.parent.name}.svg" alt="{p.parent.name}">'
                    for p in reports) or "<p>No fleet run yet: <code>tau-demo fleet run</code> writes one.</p>"
    return web.Response(text=f"<!doctype html><title>Fleet runs</title><h1>Fleet runs</h1>{items}",
                        content_type="text/html")


async def fleet_picture(request: web.Request) -> web.Response:
    run = request.match_info["run"]
    path = request.app[RUNS_KEY].root / FLEET / run / "report.svg"
    if not FLEET_RUN.match(run) or not path.is_file():
        return _error(404, f"no fleet run {run!r} with a picture")
    return web.Response(body=await asyncio.to_thread(path.read_bytes), content_type="image/svg+xml")


def make_app(runs_dir: Path) -> web.Application:
    runs = Runs(runs_dir)
    app = web.Application()
    app[RUNS_KEY] = runs
    app[LIVE] = Live(runs)
    app.router.add_get("/", index)
    app.router.add_get("/api/stream", stream)
    app.router.add_get("/api/view", view)
    app.router.add_get("/api/runs", runs_list)
    app.router.add_get("/fleet", fleet_page)
    app.router.add_get("/fleet/{run}.svg", fleet_picture)
    app.router.add_static("/static", STATIC, append_version=False)
    return app


def bind(port: int = 0) -> socket.socket:
    """A listening socket on 127.0.0.1 (port 0: a free one).  PortInUse when `port` is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(64)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise PortInUse(errno.EADDRINUSE, f"port {port} on {HOST} is in use; choose another with --port, or "
                                              "leave --port out for a free one") from None
        raise
    sock.setblocking(False)
    return sock


class Server:
    """The page's server on a bound socket: run() in the foreground, or start() in a thread."""

    def __init__(self, runs_dir: Path, port: int = 0, between_polls: Between | None = None):
        """`between_polls(stop)`: the live view's wait between two polls (default every_poll, POLL seconds)."""
        self.runs_dir = Path(runs_dir)
        self.between_polls = between_polls
        self.sock = bind(port)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://{HOST}:{self.port}/"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()

    async def serve(self) -> None:
        """Serve until stop() (or the task is cancelled)."""
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        app = make_app(self.runs_dir)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_TIMEOUT)
        await runner.setup()
        await web.SockSite(runner, self.sock).start()
        follower = asyncio.create_task(app[LIVE].follow(self._stop, self.between_polls))
        self._started.set()
        try:
            await self._stop.wait()
        finally:
            self._stop.set()
            await follower
            app[LIVE].close()
            await runner.cleanup()

    def start(self) -> str:
        """Serve in a background thread; the address."""
        self._thread = threading.Thread(target=lambda: asyncio.run(self.serve()), name="tau-demo-ui", daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the page's server did not start within 10s")
        return self.url

    def stop_soon(self) -> None:
        """Stop serving (from the server's own event loop, e.g. a signal handler)."""
        if self._stop is not None:
            self._stop.set()

    def stop(self) -> None:
        """Stop the server started in a thread, and wait for it."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(5)

