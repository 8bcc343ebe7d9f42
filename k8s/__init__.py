"""The foundation, importing nothing else of ours: the API client (verbs, typed errors), the one watch
(list+watch stream and the background Watch every consumer uses), resources, every key and name (keys),
plain-object helpers and timestamps (objects), quantities, durations, manifest files, the controller
runtime (work queue, cache, loop), heartbeat Leases and pause points."""
