"""Kueue's own metrics, read from the running Kueue: the kwok backend's host process serves them on loopback
(metrics.bindAddress 127.0.0.1:<port>, kueue_manifests.manager_config) behind controller-runtime's
authentication filter, which takes a bearer token (checked with a TokenReview) that may GET /metrics (a
SubjectAccessReview).  The token is a short-lived one of the ServiceAccount tau-demo-system/kueue-metrics-reader
(manifests/rbac.yaml).  The serving certificate is not verified: it sits at a path every cluster on the machine
shares (/etc/kueue/metrics/certs, hard-coded in Kueue's main.go), and this is a loopback connection."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

from k8s import metrics
from k8s.client import Kube
from k8s.errors import ApiError, Unreachable
from k8s.keys import METRICS_READER, SYSTEM_NAMESPACE

from .state import state_of


class MetricsUnavailable(RuntimeError):
    """Kueue's metrics could not be read now (no token, no answer); the message says why.  Worth asking again."""


class NotServed(MetricsUnavailable):
    """This cluster's Kueue serves no metrics this process can read (another backend, an older cluster): asking
    again cannot help; the message says why."""


def page(k: Kube, kubeconfig: str) -> str:
    """Kueue's /metrics page, read now."""
    st = state_of(kubeconfig)
    if st is None:
        raise NotServed(f"no cluster state under this state root has the kubeconfig {kubeconfig}")
    port = st.ports.get("kueue_metrics")
    if st.backend != "kwok" or not port:
        raise NotServed(f"Kueue serves no metrics on loopback on the {st.backend} backend (it runs in a pod "
                        "there)" if st.backend != "kwok" else
                        "this cluster's Kueue was started before it served metrics: run `tau-demo cluster "
                        "down` and `up`")
    try:
        token = k.request_token(SYSTEM_NAMESPACE, METRICS_READER)
    except (ApiError, Unreachable) as e:
        raise MetricsUnavailable(f"no token for {SYSTEM_NAMESPACE}/{METRICS_READER}: {e}") from e
    req = urllib.request.Request(f"https://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {token}"})
    unverified = ssl.create_default_context()
    unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE
    try:
        with urllib.request.urlopen(req, timeout=10, context=unverified) as r:
            return r.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as e:
        raise MetricsUnavailable(f"Kueue's metrics on 127.0.0.1:{port}: {e}") from e


def counter(k: Kube, kubeconfig: str, name: str, **labels: str) -> float:
    """A counter of Kueue's, 0 while Kueue has not counted anything for these labels (the series is absent)."""
    got = metrics.value(page(k, kubeconfig), name, **labels)
    return 0.0 if got is None else got
