"""The timeline of a scenario: lane states per poll (lanes, pure), the JSON-lines event log (log),
and the picture drawn from it (svg)."""
