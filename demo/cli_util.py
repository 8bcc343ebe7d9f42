"""Helpers shared by the controller commands."""

from __future__ import annotations

import signal
import threading

import click


def run_controller(controller, what: str) -> None:
    """Run controller.run(stop) until SIGINT/SIGTERM."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    controller.run(stop)
    click.echo(f"{what} stopped", err=True)
