"""Which answers the client retries, and after how long: retry_after() on plain status codes and headers.
The retry loop itself runs against the real kube-apiserver (tests/cluster/test_client_retry.py)."""

from __future__ import annotations

import pytest

from k8s import client as kc


@pytest.mark.parametrize("status,headers,wait", [(429, {"Retry-After": "1"}, 1.0), (503, {"Retry-After": "2"}, 2.0),
                                                 (500, {"Retry-After": "3"}, 3.0), (599, {"Retry-After": "1"}, 1.0),
                                                 (429, {}, None), (429, None, None),
                                                 (409, {"Retry-After": "1"}, None), (499, {"Retry-After": "1"}, None),
                                                 (200, {"Retry-After": "1"}, None),
                                                 (429, {"Retry-After": "600"}, kc.RETRY_AFTER_MAX),
                                                 (429, {"Retry-After": "5"}, 5.0),
                                                 (429, {"Retry-After": "0"}, 0.1), (429, {"Retry-After": "-3"}, 0.1),
                                                 (429, {"Retry-After": "0.5"}, 0.5),
                                                 (500, {"Retry-After": "soon"}, None)])
def test_retry_after(status, headers, wait):
    assert kc.retry_after(status, headers) == wait

