"""The foundation, importing nothing else of ours: the API client (verbs, typed errors, informer),
resources, every key and name (keys), plain-object helpers and timestamps (objects), quantities,
durations, manifest files, the controller runtime (work queue, loop), heartbeat Leases and pause points."""
