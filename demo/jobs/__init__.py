"""A researcher's GPU Job: rendering it, preflight (pure checks, and the reads they need), observing its
objects, deriving its five startup phases (pure), and following them live."""
