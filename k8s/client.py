"""The one place that talks to the Kubernetes API.  Everything is plain dicts.

Split like kopf: resources (resources.py), errors (errors.py), and here the verbs: fetching
(get, list), patching (merge patch with an optional resourceVersion precondition, status patch,
server-side apply), creating/deleting, and one watch request (watch.py makes the list+watch stream that resumes and
relists, and the background Watch every consumer uses).
"""

from __future__ import annotations

import json
import logging
import time
import urllib.parse
from typing import Any, Iterator

import urllib3
import yaml
from kubernetes import client, config

from .errors import NotFound, Unreachable, from_response
from .objects import Obj
from .resources import DELETE_OPTIONS, SERVICE_ACCOUNT, TOKEN_REQUEST, Resource

log = logging.getLogger(__name__)


# As client-go: an answer of 429 or 5xx that carries Retry-After (the apiserver's "storage is
# (re)initializing" while its watch cache refills after a restart, or max-in-flight) is retried after
# the given seconds, up to 10 times; the request was not processed.
RETRY_AFTER_ATTEMPTS = 10
RETRY_AFTER_MAX = 5.0


def retry_after(status: int, headers) -> float | None:
    """Seconds to wait before retrying an answer, or None if it is final."""
    if status != 429 and status < 500:
        return None
    value = (headers or {}).get("Retry-After")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return min(max(seconds, 0.1), RETRY_AFTER_MAX)


class Kube:
    """A connection to one cluster."""

    def __init__(self, kubeconfig: str | None = None, context: str | None = None,
                 impersonate: str | None = None, timeout: float = 30.0):
        cfg = client.Configuration()
        try:
            config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
        except (config.ConfigException, yaml.YAMLError, OSError, ValueError, TypeError, AttributeError, KeyError) as e:
            why = " ".join(str(e).split()) or type(e).__name__
            if not isinstance(e, (config.ConfigException, yaml.YAMLError, OSError)):
                why = f"not a kubeconfig file ({why})"      # YAML of another shape
            raise Unreachable(f"cannot load kubeconfig {kubeconfig or '(default)'}: {why}") from e
        cfg.retries = False
        # connections are opened on demand; the default (5 per CPU) is smaller than a controller's workers
        # plus its watches, and every request beyond it would open (and handshake) a connection of its own
        cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize or 0, 64)
        self.api = client.ApiClient(cfg)
        if impersonate:
            self.api.set_default_header("Impersonate-User", impersonate)
        self.timeout = timeout
        self.host = cfg.host

    # -- transport
    def _call(self, method: str, path: str, query: dict | None = None, body: Any = None,
              content_type: str = "application/json", stream: bool = False, timeout: float | None = None,
              accept: str = "application/json"):
        url = self.api.configuration.host + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        headers = {"Accept": accept, "Content-Type": content_type}
        headers.update(self.api.default_headers)
        self.api.update_params_for_auth(headers, [], ["BearerToken"], path, method, body)
        for attempt in range(RETRY_AFTER_ATTEMPTS + 1):
            try:   # the REST client serialises dict bodies as JSON for json and yaml content types
                resp = self.api.rest_client.request(method, url, headers=headers, body=body,
                                                    _request_timeout=timeout or self.timeout)
            except (urllib3.exceptions.HTTPError, OSError) as e:
                raise Unreachable(f"apiserver {self.api.configuration.host} did not answer {method} {path}: {e}") from e
            except client.ApiException as e:
                raise Unreachable(f"apiserver {self.api.configuration.host}: {e.reason}") from e
            wait = retry_after(resp.status, resp.headers) if attempt < RETRY_AFTER_ATTEMPTS else None
            if wait is None:
                break
            resp.read()
            log.debug("%s %s: %d with Retry-After; retrying in %.1fs", method, path, resp.status, wait)
            time.sleep(wait)
        if stream:
            if resp.status >= 300:
                raise from_response(resp.status, resp.read())
            return resp.response
        raw = resp.read()
        if resp.status >= 300:
            raise from_response(resp.status, raw)
        return json.loads(raw) if raw else {}

    # -- fetching
    def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        return self._call("GET", res.path(namespace, name))

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        try:
            return self.get(res, name, namespace)
        except NotFound:
            return None

    def list(self, res: Resource, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> tuple[list[Obj], str]:
        out = self._call("GET", res.path(namespace),
                         {"labelSelector": label_selector, "fieldSelector": field_selector})
        for item in out.get("items", []):
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", res.kind)
        return out.get("items", []), out.get("metadata", {}).get("resourceVersion", "")

    def raw(self, path: str) -> str:
        resp = self._call("GET", path, stream=True)
        return resp.read().decode()

    def get_path(self, path: str, accept: str = "application/json") -> Obj | None:
        """The JSON document at `path` (a discovery document, say), asked for as `accept`; None if not found."""
        try:
            return self._call("GET", path, accept=accept)
        except NotFound:
            return None

    # -- creating and deleting
    def request_token(self, namespace: str, service_account: str, seconds: int = 600) -> str:
        """A short-lived token of a ServiceAccount (the TokenRequest API), e.g. to read a /metrics endpoint that
        checks bearer tokens with a TokenReview."""
        body = TOKEN_REQUEST.doc(spec={"expirationSeconds": seconds})
        out = self._call("POST", SERVICE_ACCOUNT.path(namespace, service_account, "token"), body=body)
        return (out.get("status") or {}).get("token", "")

    def create(self, res: Resource, obj: Obj, namespace: str | None = None, dry_run: bool = False) -> Obj:
        return self._call("POST", res.path(namespace), {"dryRun": "All" if dry_run else None}, obj)

    def delete(self, res: Resource, name: str, namespace: str | None = None,
               propagation: str = "Background", uid: str | None = None, resource_version: str | None = None) -> bool:
        """Delete; False if it was already gone.  With uid, only that incarnation is deleted; with
        resource_version, only while the object is still at exactly that version (else 409 Conflict)."""
        body: Obj = DELETE_OPTIONS.doc(propagationPolicy=propagation)
        pre = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if pre:
            body["preconditions"] = pre
        try:
            self._call("DELETE", res.path(namespace, name), body=body)
            return True
        except NotFound:
            return False

    # -- patching
    def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None,
              resource_version: str | None = None, subresource: str | None = None, dry_run: bool = False) -> Obj:
        """JSON merge patch.  With resource_version, the apiserver refuses (409 Conflict)
        unless the object is still at exactly that version: an optimistic lock.  dry_run: admitted and
        validated (admission policies and webhooks included), never stored."""
        body = json.loads(json.dumps(patch))
        if resource_version:
            body.setdefault("metadata", {})["resourceVersion"] = resource_version
        return self._call("PATCH", res.path(namespace, name, subresource), {"dryRun": "All" if dry_run else None},
                          body=body, content_type="application/merge-patch+json")

    def patch_status(self, res: Resource, name: str, patch: Obj, namespace: str | None = None,
                     resource_version: str | None = None) -> Obj:
        return self.patch(res, name, patch, namespace, resource_version, subresource="status")

    def replace_status(self, res: Resource, obj: Obj, field_manager: str | None = None) -> Obj:
        """PUT /status: carries the object's resourceVersion, so it conflicts on a stale read.  field_manager: the
        name managedFields records for the update (default: the apiserver's, from the user agent)."""
        md = obj["metadata"]
        return self._call("PUT", res.path(md.get("namespace"), md["name"], "status"), {"fieldManager": field_manager},
                          body=obj)

    def apply(self, res: Resource, obj: Obj, field_manager: str, subresource: str | None = None,
              force: bool = True) -> Obj:
        md = obj["metadata"]
        return self._call("PATCH", res.path(md.get("namespace"), md["name"], subresource),
                          {"fieldManager": field_manager, "force": "true" if force else None},
                          body=obj, content_type="application/apply-patch+yaml")

    # -- watching
    def watch(self, res: Resource, namespace: str | None = None, label_selector: str | None = None,
              resource_version: str | None = None, timeout_seconds: int = 60) -> Iterator[tuple[str, Obj]]:
        """One watch request: yields (type, object) until the server closes it.

        Raises Gone on 410 (the caller relists).  BOOKMARK events carry only a resourceVersion.
        """
        query = {"watch": "1", "allowWatchBookmarks": "true", "labelSelector": label_selector,
                 "resourceVersion": resource_version, "timeoutSeconds": str(timeout_seconds)}
        resp = self._call("GET", res.path(namespace), query, stream=True, timeout=timeout_seconds + 15)
        try:
            buf = b""
            for chunk in resp.stream(4096, decode_content=True):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    ev = json.loads(line)
                    if ev.get("type") == "ERROR":
                        st = ev.get("object", {})
                        raise from_response(st.get("code", 500), json.dumps(st).encode())
                    yield ev["type"], ev["object"]
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise Unreachable(f"watch {res.plural} dropped: {e}") from e
        finally:
            resp.release_conn()
