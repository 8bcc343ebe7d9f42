"""The cluster stage's sessions side by side (`./test.sh --shards 3`, tests/cluster/conftest.py): every cluster test
file runs in exactly one of them, each session has some, the list names only files that exist, a bad shard is
refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.conftest import SHARD_OF, SHARDS, in_shard

FILES = sorted(p.name for p in (Path(__file__).resolve().parents[1] / "cluster").glob("test_*.py"))


SESSIONS = [f"{i}/{SHARDS}" for i in range(1, SHARDS + 1)]


def test_every_cluster_test_file_runs_in_exactly_one_session_and_each_session_has_some():
    for f in FILES:
        assert [in_shard(f, s) for s in SESSIONS].count(True) == 1, f
        assert in_shard(f, "")
    assert set(SHARD_OF) <= set(FILES), f"names no file of tests/cluster: {sorted(set(SHARD_OF) - set(FILES))}"
    assert all(any(in_shard(f, s) for f in FILES) for s in SESSIONS)
    assert SHARDS == 3 and in_shard("test_real_ca.py", "1/3") and in_shard("test_upstream.py", "1/3") \
        and in_shard("test_multikueue.py", "2/3") and in_shard("test_kueue_specs.py", "3/3")


@pytest.mark.parametrize("shard", ["1", "4/3", "0/3", "1/2", "all", "/3"])
def test_a_shard_that_is_not_one_of_three_is_refused(shard):
    with pytest.raises(pytest.UsageError, match="1/3 to 3/3, or empty"):
        in_shard("test_ui.py", shard)
