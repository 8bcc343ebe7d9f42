"""`tau-demo ui`: the live page of the scenarios' event logs, and replay of a finished run."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import click

from k8s.paths import RUNS, shown
from demo.timeline import log as event_log
from demo.ui.server import PortInUse, Server
from .options import CONTEXT_SETTINGS, fail

def _replay_target(path: Path) -> tuple[Path, str]:
    """(runs directory, "<run>/<label>") for a run directory or one of its .jsonl logs; exits with a
    message when it is neither, or a log in it is not an event log."""
    if path.is_dir():
        logs = sorted(path.glob("*.jsonl"))
        if not logs:
            fail(f"--replay {path}: no event logs (*.jsonl) in it; a scenario run writes them to runs/<time>/")
    elif path.suffix == ".jsonl":
        logs = [path]
    else:
        fail(f"--replay {path}: neither a run directory (runs/<time>/) nor an event log (.jsonl)")
    for p in logs:
        try:
            events = event_log.read(p)
        except (ValueError, OSError) as e:
            fail(f"--replay: {e}; not a tau-demo event log")
        if not events:
            fail(f"--replay: {p} holds no events")
    first = logs[0].resolve()
    return first.parent.parent, f"{first.parent.name}/{first.stem}"


def start_server(runs_dir: Path, port: int) -> Server:
    """The page's server bound on 127.0.0.1 (exits with a clear message when the port is taken)."""
    if runs_dir.exists() and not runs_dir.is_dir():
        fail(f"--runs {runs_dir}: not a directory")
    try:
        return Server(runs_dir, port)
    except PortInUse as e:
        fail(e.strerror)
    except OSError as e:
        fail(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}")


@click.command("ui", context_settings=CONTEXT_SETTINGS)
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="port on 127.0.0.1 (0: a free one); a port in use is an error")
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False, path_type=Path), default=RUNS,
              help="where scenario runs write their event logs [default: runs/ of the repository]")
@click.option("--replay", type=click.Path(exists=True, path_type=Path),
              help="open a finished run (runs/<time>/ or one of its .jsonl logs) with a time slider")
def ui_cmd(port, runs_dir, replay):
    """Serve the live page on 127.0.0.1: the scenario being recorded, as it happens (one lane per object,
    the five phases of `tau-demo watch`, the deadline and the committed decision, each controller's log
    lines beside the lane they concern), pushed to the browser as the events arrive.  It follows the
    newest event log under --runs; finished runs open for replay from the page, or with --replay.
    Runs until Ctrl-C.  Exit 1 when the port is in use."""
    url_suffix = ""
    if replay is not None:
        runs_dir, run_id = _replay_target(replay)
        url_suffix = f"?run={run_id}"
    server = start_server(runs_dir, port)
    click.echo(f"tau-demo ui: {server.url}{url_suffix}  (event logs under {shown(runs_dir)}; Ctrl-C stops)",
               nl=True)

    async def main():
        task = asyncio.create_task(server.serve())
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, server.stop_soon)
        await task
    asyncio.run(main())
    click.echo("tau-demo ui stopped", err=True)
