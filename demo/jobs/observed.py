"""What observe's reads mean (pure): which Job a read found, a yes/no read that may be refused, why the TauClusters
could not be read, and which object preflight reads next from the one before.  The reads are observe.py's."""

from __future__ import annotations

from typing import Callable

from k8s.errors import ApiError, NotFound
from k8s.objects import uid as uid_of
from k8s.resources import TAUCLUSTER
from .preflight import PreflightInputs, gpu_flavors


def is_the_job(job: dict | None, job_uid: str | None) -> bool:
    """The Job read is the one asked for: it exists and, when a uid is given, carries it (not one made again
    under the same name)."""
    return job is not None and (not job_uid or uid_of(job) == job_uid)


def yes_no(read: Callable[[], bool]) -> bool | None:
    """A yes/no read (a namespace exists, a heartbeat Lease is fresh): a 404 is no; any other refusal (e.g.
    forbidden) is None, it cannot be told."""
    try:
        return read()
    except NotFound:
        return False
    except ApiError:
        return None


def tauclusters_unread(e: ApiError) -> str:
    """Why the TauClusters cannot be read: the CRD is not installed (404), or the API's own words."""
    if isinstance(e, NotFound):
        return f"the TauCluster CRD ({TAUCLUSTER.crd_name}) is not installed here"
    return f"the TauClusters cannot be read ({e})"


def cluster_queue_of(local_queue: dict | None) -> str:
    """The ClusterQueue a LocalQueue points at ("" when there is none to read)."""
    return ((local_queue or {}).get("spec") or {}).get("clusterQueue") or ""


def gpu_flavor_of(cluster_queue: dict | None) -> str | None:
    """The ResourceFlavor that places the gang's nodes: the ClusterQueue's first GPU flavor (None: none)."""
    flavors = gpu_flavors(cluster_queue)
    return flavors[0] if flavors else None


def keyed_by_name(objs: list[dict]) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objs}


def no_namespace() -> PreflightInputs:
    """What preflight is given when the namespace does not exist: nothing else is read."""
    return PreflightInputs(None, None, {}, {}, None, {}, namespace_exists=False)
