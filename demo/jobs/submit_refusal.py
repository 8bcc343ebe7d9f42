"""What `submit` says when it creates nothing (pure, on what the cluster answered): the refusal before the
create, from what was read, and the API's refusal of the create itself.  The reads and the create are
submit.py's."""

from __future__ import annotations

from k8s.errors import ApiError, Conflict, Invalid, NotFound
from k8s.keys import DEMO_NAMESPACE


def exists_message(namespace: str, name: str) -> str:
    return (f"a Job named {namespace}/{name} already exists; nothing was created. Choose another --name, "
            f"or delete it first: kubectl delete job -n {namespace} {name}")


def no_namespace_message(namespace: str) -> str:
    return (f"namespace {namespace!r} does not exist; nothing was created. The demo's profiles live in "
            f"{DEMO_NAMESPACE!r} (kubectl get localqueues -A)")


def refusal(namespace: str, name: str, namespace_exists: bool | None, job_exists: bool) -> str | None:
    """Why submit creates nothing, from what it read before creating (None: go on).  A namespace that
    cannot be read (None, e.g. forbidden) is no reason: the create will say."""
    if namespace_exists is False:
        return no_namespace_message(namespace)
    if job_exists:
        return exists_message(namespace, name)
    return None


def create_refused(e: ApiError, namespace: str, name: str) -> str:
    """What submit says when the API refuses the create itself: 409 AlreadyExists is a name race lost
    (the Job was created after the check), 404 a namespace deleted meanwhile, 422 or a webhook's denial
    the cluster's reason."""
    if isinstance(e, Conflict):
        return exists_message(namespace, name)
    if isinstance(e, NotFound):
        return no_namespace_message(namespace)
    if isinstance(e, Invalid):
        return f"the cluster refused the Job: {e.message}"
    return str(e)
