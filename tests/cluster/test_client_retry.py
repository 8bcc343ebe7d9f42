"""The client retries the answers the apiserver asks it to retry (429 or 5xx with Retry-After), as client-go
does, and takes every other answer as final: against the real kube-apiserver producing them.

- 429 from API Priority and Fairness: a PriorityLevelConfiguration of the test's own, with no seat to lend or
  borrow and a queue of one, serves only the test's ServiceAccount (a FlowSchema).  The test fills its seats
  with creates that a validating webhook of its own holds, and its queue with one more; a request of the same
  ServiceAccount then gets the apiserver's 429 with Retry-After, is retried, and succeeds once the seats free.
- 5xx with Retry-After: the same webhook denies a create with code 503 and `retryAfterSeconds` (the apiserver
  turns them into the answer's status and its Retry-After header); without `retryAfterSeconds` the answer
  carries no Retry-After and is final.

The webhook is an HTTPS server in this process on 127.0.0.1 with the cluster's certificate (like Kueue's host
process): the apiserver of the kwok backend, a host process too, calls it.  On the kind backend the apiserver
runs in a container that cannot reach it, so this module runs on the kwok backend only.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import ssl
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from demo.cluster.kwok import kwok_cluster_dir
from k8s import client as kc
from k8s.client import Kube
from k8s.errors import ApiError
from k8s.poll import WaitTimedOut
from k8s.resources import CONFIG_MAP, NAMESPACE, Resource
from tests.cluster.conftest import BACKEND, wait_for

pytestmark = pytest.mark.skipif(BACKEND != "kwok", reason="the test's webhook listens on the host's loopback, "
                                "which the kind backend's apiserver (in a container) cannot reach")

# the API objects only this test makes
SERVICE_ACCOUNT = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLE_BINDING = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
FLOW_SCHEMA = Resource("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", namespaced=False)
PRIORITY_LEVEL = Resource("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations",
                          "PriorityLevelConfiguration", namespaced=False)
VALIDATING_WEBHOOK = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                              "ValidatingWebhookConfiguration", namespaced=False)

LABEL = "tau-demo.io/test-retry"     # only ConfigMaps with this label go to the test's webhook
RETRIED = re.compile(r"(GET|POST) (\S+): (\d+) with Retry-After; retrying in ([\d.]+)s")


# ---------------------------------------------------------------------------- the test's webhook

class Webhook:
    """A validating webhook whose answers the test decides: `answer(name)` -> None (allow) or the Status of a
    denial.  Every call is recorded (name, monotonic time); a call for an object named "hold-*" waits until
    `release` is set."""

    def __init__(self):
        self.calls: list[tuple[str, float]] = []
        self.answer = lambda name: None
        self.release = threading.Event()
        self.lock = threading.Lock()

    def review(self, body: dict) -> dict:
        req = body["request"]
        name = req["object"]["metadata"]["name"]
        with self.lock:
            self.calls.append((name, time.monotonic()))
        if name.startswith("hold-"):
            self.release.wait(25)                  # within the webhook's timeoutSeconds
        status = self.answer(name)
        response = {"uid": req["uid"], "allowed": status is None}
        if status is not None:
            response["status"] = status
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}

    def called(self, name: str) -> list[float]:
        with self.lock:
            return [t for n, t in self.calls if n == name]


def serve(webhook: Webhook, certfile: str, keyfile: str) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            out = json.dumps(webhook.review(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certfile, keyfile)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, name="test-webhook", daemon=True).start()
    return server


@pytest.fixture(scope="module")
def setting(demo_cluster, k, kubeconfig):
    """A namespace, a ServiceAccount that may edit it, the client as that ServiceAccount, the webhook serving
    its labelled ConfigMaps, and the priority level (name, seats) that serves nothing but that ServiceAccount."""
    u = uuid.uuid4().hex[:5]
    ns, sa, level = f"tau-retry-{u}", "retry", f"tau-test-retry-{u}"
    pki = kwok_cluster_dir(demo_cluster) / "pki"
    webhook = Webhook()
    server = serve(webhook, str(pki / "admin.crt"), str(pki / "admin.key"))
    made = []

    def make(res, obj, namespace=None):
        k.create(res, obj, namespace)
        made.append((res, obj["metadata"]["name"], namespace))

    try:
        make(NAMESPACE, {"metadata": {"name": ns}})
        make(SERVICE_ACCOUNT, {"metadata": {"name": sa}}, ns)
        make(ROLE_BINDING, {"metadata": {"name": sa},
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]}, ns)
        # no seat lent or borrowed, so the level has exactly its nominal seats; a queue of one request
        make(PRIORITY_LEVEL, {"metadata": {"name": level}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 1}}}}})
        make(FLOW_SCHEMA, {"metadata": {"name": level}, "spec": {
            "priorityLevelConfiguration": {"name": level}, "matchingPrecedence": 50,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": sa, "namespace": ns}}],
                       "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                          "namespaces": ["*"], "clusterScope": True}]}]}})
        ca = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
        make(VALIDATING_WEBHOOK, {"metadata": {"name": level}, "webhooks": [{
            "name": "retry.test.tau-demo.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": "Fail", "timeoutSeconds": 30,
            "clientConfig": {"url": f"https://127.0.0.1:{server.server_address[1]}/validate", "caBundle": ca},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "objectSelector": {"matchExpressions": [{"key": LABEL, "operator": "Exists"}]}}]})
        seats = wait_for(lambda: flowcontrol(k, "nominal_limit_seats", level), 60,
                         what=f"the apiserver to serve priority level {level}")
        as_sa = Kube(kubeconfig, impersonate=f"system:serviceaccount:{ns}:{sa}")
        refused = []

        def probe():
            try:
                as_sa.create(CONFIG_MAP, labelled(f"probe-{uuid.uuid4().hex[:5]}"), ns)
            except ApiError as e:
                if e.status != 403:
                    raise
                refused[:] = [str(e)]   # the RoleBinding (or edit's aggregation) not yet in the authorizer's cache
                return False
            return webhook.calls

        # the webhook and the RoleBinding take effect once the apiserver's informers have them: an allowed
        # create reaches the webhook
        try:
            wait_for(probe, 60, what="the test's webhook to be called")
        except WaitTimedOut as e:
            raise WaitTimedOut(f"{e}; the last refusal: {refused or 'none'}") from e
        yield {"ns": ns, "kube": as_sa, "webhook": webhook, "level": level, "seats": int(seats)}
    finally:
        webhook.release.set()
        for res, name, namespace in reversed(made):
            k.delete(res, name, namespace)
        server.shutdown()


def labelled(name: str) -> dict:
    return {"metadata": {"name": name, "labels": {LABEL: "1"}}, "data": {"k": "v"}}


def flowcontrol(k: Kube, metric: str, level: str, **labels) -> float:
    """apiserver_flowcontrol_<metric>{priority_level=level, labels...} summed over its series, from /metrics."""
    total, found = 0.0, False
    for line in k.raw("/metrics").splitlines():
        if not line.startswith(f"apiserver_flowcontrol_{metric}{{"):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line[:line.rindex("}")]))
        if got.get("priority_level") == level and all(got.get(key) == v for key, v in labels.items()):
            total, found = total + float(line.rsplit(" ", 1)[1]), True
    return total if found else 0.0


@pytest.fixture
def retries(caplog):
    """The client's log lines saying it got an answer with Retry-After and will retry: (method, path, status,
    seconds), in order; `retries.first` is set at the first one."""
    seen: list[tuple[str, str, int, float]] = []
    seen_first = threading.Event()

    class Lines(logging.Handler):
        def emit(self, record):
            m = RETRIED.fullmatch(record.getMessage())
            if m:
                seen.append((m[1], m[2], int(m[3]), float(m[4])))
                seen_first.set()
    handler = Lines(logging.DEBUG)
    logger = logging.getLogger(kc.__name__)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    yield seen, seen_first
    logger.removeHandler(handler)
    logger.setLevel(old)


# ---------------------------------------------------------------------------- 429 from API Priority and Fairness

def test_a_request_that_priority_and_fairness_rejects_is_retried_and_succeeds(setting, k, retries):
    seen, first = retries
    ns, kube, webhook, level, seats = (setting[x] for x in ("ns", "kube", "webhook", "level", "seats"))
    webhook.release.clear()
    kube.create(CONFIG_MAP, {"metadata": {"name": "target"}, "data": {"answer": "42"}}, ns)
    rejected0 = flowcontrol(k, "rejected_requests_total", level)
    created: list[str] = []

    def create(name: str) -> None:
        created.append(kube.create(CONFIG_MAP, labelled(name), ns)["metadata"]["name"])
    holders = [threading.Thread(target=create, args=(f"hold-{i}",)) for i in range(seats)]
    for t in holders:
        t.start()
    wait_for(lambda: flowcontrol(k, "current_executing_requests", level) == seats
             and len({n for n, _ in webhook.calls if n.startswith("hold-")}) == seats, 30,
             what=f"{seats} creates to hold every seat of {level} in the webhook")
    queued = threading.Thread(target=create, args=("queued",))
    queued.start()
    wait_for(lambda: flowcontrol(k, "current_inqueue_requests", level) == 1, 30, what=f"one request in {level}'s queue")

    got: list[dict] = []
    probe = threading.Thread(target=lambda: got.append(kube.get(CONFIG_MAP, "target", ns)))
    t0 = time.monotonic()
    probe.start()
    assert first.wait(30), "the client never got an answer with Retry-After"
    webhook.release.set()                                     # the seats free, the queue drains
    probe.join(60)
    for t in [*holders, queued]:
        t.join(60)
    took = time.monotonic() - t0

    assert got and got[0]["data"] == {"answer": "42"}, "the retried request succeeded"
    assert seen and all(m == "GET" and p == f"/api/v1/namespaces/{ns}/configmaps/target" and s == 429
                        for m, p, s, _ in seen), seen
    assert len(seen) < kc.RETRY_AFTER_ATTEMPTS, seen
    # the apiserver's own account: it rejected exactly the requests the client retried, for a full queue
    assert flowcontrol(k, "rejected_requests_total", level) - rejected0 == len(seen)
    assert flowcontrol(k, "rejected_requests_total", level, reason="queue-full") >= len(seen)
    waited = sum(s for *_, s in seen)
    assert 1.0 <= waited <= kc.RETRY_AFTER_MAX * len(seen) and took >= waited, (waited, took, seen)
    assert sorted(created) == sorted([*(f"hold-{i}" for i in range(seats)), "queued"]), "every held create went through"


# ---------------------------------------------------------------------------- 5xx from the test's webhook

def denial(code: int, retry_after: int | None) -> dict:
    status = {"status": "Failure", "code": code, "reason": "ServiceUnavailable", "message": "the test says: not now"}
    if retry_after is not None:
        status["details"] = {"retryAfterSeconds": retry_after}
    return status


def test_a_5xx_with_retry_after_is_retried_after_the_seconds_it_says_and_succeeds(setting, k, retries):
    seen, _ = retries
    ns, kube, webhook = setting["ns"], setting["kube"], setting["webhook"]
    answers = iter([denial(503, 1), denial(503, 1)])
    webhook.answer = lambda name: next(answers, None)
    try:
        obj = kube.create(CONFIG_MAP, labelled("after-two"), ns)
    finally:
        webhook.answer = lambda name: None
    calls = webhook.called("after-two")
    assert len(calls) == 3, "two denials, then the create that went through"
    assert obj["metadata"]["name"] == "after-two" and k.get(CONFIG_MAP, "after-two", ns)["data"] == {"k": "v"}
    assert [(m, s, w) for m, _, s, w in seen] == [("POST", 503, 1.0), ("POST", 503, 1.0)], seen
    assert all(b - a >= 1.0 for a, b in zip(calls, calls[1:])), calls


def test_a_retry_after_beyond_the_cap_waits_the_cap(setting, retries):
    seen, _ = retries
    ns, kube, webhook = setting["ns"], setting["kube"], setting["webhook"]
    answers = iter([denial(503, 600)])
    webhook.answer = lambda name: next(answers, None)
    try:
        kube.create(CONFIG_MAP, labelled("capped"), ns)
    finally:
        webhook.answer = lambda name: None
    calls = webhook.called("capped")
    assert len(calls) == 2
    assert [(s, w) for _, _, s, w in seen] == [(503, kc.RETRY_AFTER_MAX)], seen
    # at most the cap and the round trips of a loaded machine, far from the 600 s asked
    assert kc.RETRY_AFTER_MAX <= calls[1] - calls[0] < kc.RETRY_AFTER_MAX + 10, calls


def test_an_answer_without_retry_after_is_final(setting, retries):
    seen, _ = retries
    ns, kube, webhook = setting["ns"], setting["kube"], setting["webhook"]
    webhook.answer = lambda name: denial(503, None)
    try:
        with pytest.raises(ApiError) as e:
            kube.create(CONFIG_MAP, labelled("final"), ns)
    finally:
        webhook.answer = lambda name: None
    assert e.value.status == 503 and "the test says: not now" in e.value.message
    assert webhook.called("final") and len(webhook.called("final")) == 1, "asked once"
    assert seen == []
    assert kube.get_or_none(CONFIG_MAP, "final", ns) is None


def test_retry_after_is_followed_a_bounded_number_of_times(setting, retries):
    seen, _ = retries
    ns, kube, webhook = setting["ns"], setting["kube"], setting["webhook"]
    webhook.answer = lambda name: denial(503, 1)
    try:
        with pytest.raises(ApiError) as e:
            kube.create(CONFIG_MAP, labelled("never"), ns)
    finally:
        webhook.answer = lambda name: None
    assert e.value.status == 503
    assert len(webhook.called("never")) == kc.RETRY_AFTER_ATTEMPTS + 1, "the first try and every retry"
    assert len(seen) == kc.RETRY_AFTER_ATTEMPTS
    assert kube.get_or_none(CONFIG_MAP, "never", ns) is None
