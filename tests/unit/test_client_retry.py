"""The client retries an answer the apiserver asks to retry (429/5xx with Retry-After), as client-go does."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from demo.k8s import client as kc
from demo.k8s.errors import ApiError, NotFound


class FakeResp:
    def __init__(self, status: int, body: dict, headers: dict | None = None):
        self.status, self.headers, self._data = status, headers or {}, json.dumps(body).encode()
        self.response = self

    def read(self):
        return self._data


def fake_kube(answers: list[FakeResp]):
    calls = []

    def request(method, url, **_):
        calls.append((method, url))
        return answers.pop(0)
    k = kc.Kube.__new__(kc.Kube)
    k.api = SimpleNamespace(configuration=SimpleNamespace(host="https://x"), default_headers={},
                            update_params_for_auth=lambda *a: None, rest_client=SimpleNamespace(request=request))
    k.timeout = 1.0
    return k, calls


@pytest.mark.parametrize("status,headers,wait", [(429, {"Retry-After": "1"}, 1.0), (503, {"Retry-After": "2"}, 2.0),
                                                 (429, {}, None), (409, {"Retry-After": "1"}, None),
                                                 (429, {"Retry-After": "600"}, kc.RETRY_AFTER_MAX),
                                                 (500, {"Retry-After": "soon"}, None)])
def test_retry_after(status, headers, wait):
    assert kc.retry_after(status, headers) == wait


def test_storage_reinitializing_is_retried(monkeypatch):
    monkeypatch.setattr(kc.time, "sleep", lambda s: None)
    busy = {"kind": "Status", "reason": "TooManyRequests", "message": "storage is (re)initializing"}
    k, calls = fake_kube([FakeResp(429, busy, {"Retry-After": "1"}), FakeResp(429, busy, {"Retry-After": "1"}),
                          FakeResp(200, {"metadata": {"name": "a"}})])
    assert k._call("GET", "/api/v1/nodes/a") == {"metadata": {"name": "a"}}
    assert len(calls) == 3


def test_final_answers_are_not_retried(monkeypatch):
    monkeypatch.setattr(kc.time, "sleep", lambda s: None)
    k, calls = fake_kube([FakeResp(404, {"reason": "NotFound", "message": "gone"}, {"Retry-After": "1"})])
    with pytest.raises(NotFound):
        k._call("GET", "/api/v1/nodes/a")
    assert len(calls) == 1


def test_gives_up_after_ten_retries(monkeypatch):
    monkeypatch.setattr(kc.time, "sleep", lambda s: None)
    busy = {"reason": "TooManyRequests", "message": "storage is (re)initializing"}
    k, calls = fake_kube([FakeResp(429, busy, {"Retry-After": "1"}) for _ in range(12)])
    with pytest.raises(ApiError, match="429 TooManyRequests"):
        k._call("GET", "/api/v1/nodes/a")
    assert len(calls) == kc.RETRY_AFTER_ATTEMPTS + 1
