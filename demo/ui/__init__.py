"""The live page: `tau-demo ui` serves, on 127.0.0.1, a page that follows the event log a scenario's
recorder is writing (server push) and replays finished runs; the view itself is demo.timeline.board."""
