"""The real Cluster Autoscaler side by side, on plain data: the kwok provider's ConfigMaps generated from the
pools (against the rules the provider's loader enforces), the CA's command line and environment, the
kubeconfig check, the mutual-exclusion predicates, the source tree checks and the build-info probe."""

from __future__ import annotations

import io
import tarfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from k8s.keys import (CA_STATUS, FAKE_CA_LEASE, HOSTNAME_LABEL, KWOK_MAX_COUNT_ANNOTATION, KWOK_MIN_COUNT_ANNOTATION,
                      KWOK_PROVIDER_CONFIG, KWOK_PROVIDER_TEMPLATES, MANAGED_LABEL, NOT_READY_TAINT, POOL_LABEL,
                      REAL_CA_LEASE, SYSTEM_NAMESPACE)
from demo.realca import coexist, provider
from demo.realca.process import RealCAError, Settings, ca_args, ca_env, kubeconfig_target, main_loops_metric
from demo.toolchain import buildinfo, casource, components, versions
from demo.toolchain.gobuild import Progress, ToolchainError
from k8s.pools import load_pools, node_manifest, parse_pools

REPO = Path(__file__).resolve().parents[2]
POOLS = load_pools(REPO / "manifests" / "node-pools.yaml")


def two_pools():
    base = {"minNodes": 0, "capacity": {"cpu": "8", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "4"},
            "allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "4"}}
    return parse_pools({"apiVersion": "tau-demo.io/v1", "kind": "NodePoolList", "pools": [
        {"name": "a", "maxNodes": 3, "namePrefix": "a-", "labels": {"pool": "a"}, **base},
        {"name": "b", "minNodes": 1, "maxNodes": 5, "namePrefix": "b-", "taints": [{"key": "k", "effect": "NoExecute"}],
         **{k: v for k, v in base.items() if k != "minNodes"}}]}, "test")


def cms(pools=POOLS):
    config_cm, templates_cm = provider.configmaps(pools)
    return (yaml.safe_load(config_cm["data"]["config"]), yaml.safe_load(templates_cm["data"]["templates"]),
            config_cm, templates_cm)


# ---------------------------------------------------------------------------- the provider's ConfigMaps

def test_configmaps_have_the_names_keys_and_namespace_the_provider_reads():
    _, _, config_cm, templates_cm = cms()
    assert config_cm["metadata"]["name"] == KWOK_PROVIDER_CONFIG == "kwok-provider-config"
    assert templates_cm["metadata"]["name"] == KWOK_PROVIDER_TEMPLATES
    assert set(config_cm["data"]) == {"config"} and set(templates_cm["data"]) == {"templates"}
    assert config_cm["metadata"]["namespace"] == templates_cm["metadata"]["namespace"] == "kube-system"


def test_config_document_passes_the_loader_rules():
    config, _, _, _ = cms()
    assert config["readNodesFrom"] == "configmap"
    assert config["configmap"]["name"] == KWOK_PROVIDER_TEMPLATES        # required with readNodesFrom: configmap
    groups = config["nodegroups"]
    assert len([k for k in ("fromNodeLabelKey", "fromNodeAnnotationKey") if groups.get(k)]) == 1
    assert groups["fromNodeLabelKey"] == POOL_LABEL
    assert config["nodes"]["skipTaint"] is True                           # no kwok-provider=true:NoSchedule
    assert "gpuConfig" not in config["nodes"]                            # half a gpuConfig is an error


def test_templates_are_a_list_of_nodes_one_per_pool_with_distinct_groups():
    for pools in (POOLS, two_pools()):
        _, templates, _, _ = cms(pools)
        assert templates["kind"] == "List"                               # a single bare Node is rejected
        items = templates["items"]
        assert [i["kind"] for i in items] == ["Node"] * len(pools)
        groups = [i["metadata"]["labels"][POOL_LABEL] for i in items]
        assert groups == [p.name for p in pools] and len(set(groups)) == len(groups)


def test_template_carries_min_max_and_an_annotations_map():
    _, templates, _, _ = cms(two_pools())
    for item, (lo, hi) in zip(templates["items"], ((0, 3), (1, 5))):
        ann = item["metadata"]["annotations"]
        assert ann[KWOK_MIN_COUNT_ANNOTATION] == str(lo) and ann[KWOK_MAX_COUNT_ANNOTATION] == str(hi)


def test_template_avoids_the_pitfalls():
    _, templates, _, _ = cms()
    node = templates["items"][0]
    assert HOSTNAME_LABEL not in node["metadata"]["labels"]               # would be copied to every node
    assert MANAGED_LABEL not in node["metadata"]["labels"]                # the fake's mark only
    assert "conditions" not in node["status"]                             # kwok makes it Ready
    assert node["status"]["allocatable"]["pods"]                          # no pods: nothing fits
    assert "providerID" not in node["spec"]                               # the provider sets kwok:<name>


@pytest.mark.parametrize("pool", POOLS, ids=lambda p: p.name)
def test_template_node_fits_jobs_like_the_fake_autoscalers_node(pool):
    """Same labels (but the hostname and the fake's own mark), taints, capacity and allocatable as the fake's
    nodes: the same Jobs fit the same way under both autoscalers."""
    fake = node_manifest(pool, "n-000001", None, "uid", "ns/pr")
    real = provider.node_template(pool)
    fake_labels = {k: v for k, v in fake["metadata"]["labels"].items() if k not in (HOSTNAME_LABEL, MANAGED_LABEL)}
    assert real["metadata"]["labels"] == fake_labels
    boot = [t for t in fake["spec"]["taints"] if t["key"] != NOT_READY_TAINT]    # a boot-time taint is transient
    assert real["spec"]["taints"] == boot
    assert real["status"]["capacity"] == fake["status"]["capacity"]
    assert real["status"]["allocatable"] == fake["status"]["allocatable"]


def test_no_pools_is_an_error():
    with pytest.raises(ValueError) as e:
        provider.configmaps([])
    assert str(e.value) == "no node pools: the kwok provider needs at least one node group"


CONFIG_TEXT = """\
apiVersion: v1alpha1
readNodesFrom: configmap
nodegroups:
  fromNodeLabelKey: cluster-autoscaler.kwok.nodegroup/name
nodes:
  skipTaint: true
configmap:
  name: kwok-provider-templates
"""


def test_the_two_configmaps_whole_as_kubectl_shows_them():
    """The provider decodes the templates with the API machinery (apiVersion and kind decide the type) and
    reads the config as YAML; both read top down in the order of the provider's own samples."""
    config_cm, templates_cm = provider.configmaps(two_pools()[:1], namespace="ca-ns")
    meta = {"namespace": "ca-ns", "labels": {"app.kubernetes.io/managed-by": "tau-demo"}}
    assert config_cm == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kwok-provider-config", **meta},
                         "data": {"config": CONFIG_TEXT}}
    text = templates_cm["data"]["templates"]
    assert {k: v for k, v in templates_cm.items() if k != "data"} == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kwok-provider-templates", **meta}}
    assert text.startswith("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n")
    resources = {"cpu": "8", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "4"}
    assert yaml.safe_load(text) == {"apiVersion": "v1", "kind": "List", "items": [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "a-template",
                     "labels": {"pool": "a", "kubernetes.io/os": "linux", "type": "kwok", POOL_LABEL: "a"},
                     "annotations": {KWOK_MIN_COUNT_ANNOTATION: "0", KWOK_MAX_COUNT_ANNOTATION: "3"}},
        "spec": {"taints": []},
        "status": {"capacity": resources, "allocatable": resources, "nodeInfo": {"operatingSystem": "linux"}}}]}


# ---------------------------------------------------------------------------- the CA's command line

def test_ca_args_and_env():
    args = ca_args("/k/kc.yaml", Settings(scan_interval=1, extra_args=("--max-nodes-total=9",)), 40001)
    for flag in ("--kubeconfig=/k/kc.yaml", "--cloud-provider=kwok", "--enable-provisioning-requests=true",
                 "--leader-elect=false", "--namespace=kube-system", "--address=127.0.0.1:40001",
                 "--scan-interval=1s", "--max-nodes-total=9"):
        assert flag in args
    assert args[-1] == "--max-nodes-total=9"                              # extra flags win (last)
    env = ca_env({"KUBECONFIG": "/elsewhere", "KWOK_PROVIDER_CONFIGMAP": "x", "HOME": "/root"}, "/k/kc.yaml")
    assert env["KUBECONFIG"] == "/k/kc.yaml" and env["KWOK_PROVIDER_MODE"] == "local"
    assert env["POD_NAMESPACE"] == "kube-system" and "KWOK_PROVIDER_CONFIGMAP" not in env and env["HOME"] == "/root"


def kubeconfig_file(tmp_path, current="a"):
    p = tmp_path / "kc.yaml"
    p.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": "ca", "cluster": {"server": "https://127.0.0.1:1"}},
                     {"name": "cb", "cluster": {"server": "https://127.0.0.1:2"}}],
        "contexts": [{"name": "a", "context": {"cluster": "ca"}}, {"name": "b", "context": {"cluster": "cb"}}]}))
    return p


def test_kubeconfig_target_resolves_the_current_context(tmp_path):
    p = kubeconfig_file(tmp_path, "b")
    assert kubeconfig_target(str(p), None) == (str(p.resolve()), "https://127.0.0.1:2")
    assert kubeconfig_target(str(p), "b")[1] == "https://127.0.0.1:2"


def test_kubeconfig_target_refuses_another_context_and_no_file(tmp_path):
    p = kubeconfig_file(tmp_path, "a")
    with pytest.raises(RealCAError, match="no --context flag"):
        kubeconfig_target(str(p), "b")
    with pytest.raises(RealCAError, match="no kubeconfig"):
        kubeconfig_target(None, None)
    with pytest.raises(RealCAError, match="cannot read"):
        kubeconfig_target(str(tmp_path / "missing.yaml"), None)


def test_main_loops_metric():
    text = ('# HELP x\ncluster_autoscaler_last_activity{activity="main"} 1.7e+09\n'
            'cluster_autoscaler_last_activity{activity="mainSuccessful"} 1.7000001e+09\n')
    assert main_loops_metric(text) == 1.7000001e+09
    assert main_loops_metric("# nothing yet\n") is None


# ---------------------------------------------------------------------------- mutual exclusion (pure parts)

def node(name, labels):
    return {"metadata": {"name": name, "labels": labels}}


def test_fake_and_real_nodes_are_told_apart():
    nodes = [node("f", {POOL_LABEL: "gpupool", MANAGED_LABEL: "true"}), node("r", {POOL_LABEL: "gpupool"}),
             node("static", {"agentpool": "gpupool"}), dict(node("gone", {POOL_LABEL: "gpupool"}),
                                                            metadata={"name": "gone", "labels": {POOL_LABEL: "g"},
                                                                      "deletionTimestamp": "2026-01-01T00:00:00Z"}),
             {"metadata": {"name": "fake-going", "labels": {POOL_LABEL: "g", MANAGED_LABEL: "true"},
                           "deletionTimestamp": "2026-01-01T00:00:00Z"}}]
    assert coexist.fake_nodes(nodes) == ["f"]
    assert coexist.real_nodes(nodes) == ["r"]


def test_status_age_from_managed_fields():
    now = datetime(2026, 1, 1, 0, 1, 0, tzinfo=timezone.utc)
    cm = {"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z",
                       "managedFields": [{"time": "2026-01-01T00:00:30Z"}, {"time": "2026-01-01T00:00:50Z"}]}}
    assert coexist.status_age(cm, now) == 10
    assert coexist.status_age({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}}, now) == 60
    fake_only = {"metadata": {"managedFields": [{"manager": "fake-ca", "time": "2026-01-01T00:00:55Z"}]}}
    assert coexist.status_age(fake_only, now) is None, "the fake writes the same ConfigMap; that is no real CA"
    assert coexist.status_age({}, now) is None
    assert coexist.status_age(cm, now + timedelta(minutes=5)) > coexist.STATUS_FRESH_SECONDS



def test_each_autoscaler_refuses_while_the_others_nodes_are_there_and_names_them():
    nodes = [node("f2", {POOL_LABEL: "gpupool", MANAGED_LABEL: "true"}), node("r2", {POOL_LABEL: "gpupool"}),
             node("f1", {POOL_LABEL: "gpupool", MANAGED_LABEL: "true"}), node("r1", {POOL_LABEL: "gpupool"})]
    assert coexist.fake_nodes_left(nodes) == (
        "nodes of the fake autoscaler are still there (f1, f2); the real CA would adopt them. Wait for the fake's "
        f"scale-down or delete them: kubectl delete nodes -l {MANAGED_LABEL}=true")
    assert coexist.real_nodes_left(nodes) == (
        "nodes of a real Cluster Autoscaler are still there (r1, r2): it was stopped without its clean-up "
        "(SIGKILL?). Delete them: kubectl delete nodes r1 r2")
    assert coexist.fake_nodes_left(nodes[1::2]) is None and coexist.real_nodes_left(nodes[0::2]) is None
    assert coexist.fake_nodes_left([]) is None and coexist.real_nodes_left([]) is None


def test_a_status_configmap_written_by_a_real_ca_within_a_minute_refuses_the_fake():
    now = datetime(2026, 1, 1, 0, 1, 0, tzinfo=timezone.utc)
    def cm(seconds_ago: float) -> dict:
        t = (now - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"metadata": {"managedFields": [{"manager": "cluster-autoscaler", "time": t}]}}
    assert coexist.status_fresh(cm(7), now) == (
        f"a real Cluster Autoscaler is running: it updated {CA_STATUS[0]}/{CA_STATUS[1]} 7s ago; stop it first")
    assert coexist.status_fresh(cm(59), now) is not None
    assert coexist.status_fresh(cm(60), now) is None, "exactly a minute old is stale"
    assert coexist.status_fresh(None, now) is None and coexist.status_fresh({}, now) is None


def test_a_live_heartbeat_is_refused_with_its_lease_named():
    assert coexist.FAKE_ALIVE == (f"the fake autoscaler is running (its heartbeat Lease {SYSTEM_NAMESPACE}/"
                                  f"{FAKE_CA_LEASE} is fresh); stop it first")
    assert coexist.REAL_ALIVE == (f"the real Cluster Autoscaler is running (`tau-demo real-ca`, heartbeat Lease "
                                  f"{SYSTEM_NAMESPACE}/{REAL_CA_LEASE}); stop it first")

# ---------------------------------------------------------------------------- source and build

def ca_tree(root: Path, version: str = versions.CLUSTER_AUTOSCALER) -> Path:
    mod = root / "autoscaler" / "cluster-autoscaler"
    (mod / "version").mkdir(parents=True)
    (mod / "go.mod").write_text(f"module {versions.CLUSTER_AUTOSCALER_MODULE}\n\ngo 1.26.0\n")
    (mod / "version" / "version.go").write_text(f'package version\n\nvar ClusterAutoscalerVersion = "{version}"\n')
    return mod


def test_module_root_finds_the_module_at_every_level(tmp_path):
    mod = ca_tree(tmp_path)
    for root in (tmp_path, tmp_path / "autoscaler", mod):
        assert casource.module_root(root) == mod
    assert casource.module_root(tmp_path / "nowhere") is None


def test_directory_of_another_version_is_refused(tmp_path, monkeypatch):
    ca_tree(tmp_path, "1.35.0")
    monkeypatch.setenv(casource.ENV, str(tmp_path))
    with pytest.raises(ToolchainError, match="1.35.0"):
        casource.prepare(tmp_path / "work", Progress(out=io.StringIO()))


def make_tarball(tmp_path) -> Path:
    src = tmp_path / "src"
    ca_tree(src)
    out = tmp_path / "ca.tar.xz"
    with tarfile.open(out, "w:xz") as tar:
        tar.add(src / "autoscaler", arcname="autoscaler")
    return out


def test_tarball_with_the_pinned_sha256_is_unpacked(tmp_path, monkeypatch):
    tb = make_tarball(tmp_path)
    monkeypatch.setattr(versions, "CLUSTER_AUTOSCALER_TARBALL_SHA256", casource.sha256_of(tb))
    monkeypatch.setenv(casource.ENV, str(tb))
    mod, origin = casource.prepare(tmp_path / "work", Progress(out=io.StringIO()))
    assert mod == tmp_path / "work" / "autoscaler" / "cluster-autoscaler" and "sha256 verified" in origin


def test_tarball_with_another_sha256_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(casource.ENV, str(make_tarball(tmp_path)))
    with pytest.raises(ToolchainError, match="does not match the pin"):
        casource.prepare(tmp_path / "work", Progress(out=io.StringIO()))
    assert not (tmp_path / "work").exists()


def test_source_that_is_neither_directory_nor_tarball(tmp_path, monkeypatch):
    f = tmp_path / "ca.zip"
    f.write_text("x")
    monkeypatch.setenv(casource.ENV, str(f))
    with pytest.raises(ToolchainError, match="neither a directory nor a .tar.xz"):
        casource.prepare(tmp_path / "work", Progress(out=io.StringIO()))


def test_build_settings_are_parsed_from_the_build_info():
    info = buildinfo.parse_modinfo("go1.26.8", "\n".join([
        "path\tk8s.io/autoscaler/cluster-autoscaler",
        "mod\tk8s.io/autoscaler/cluster-autoscaler\t(devel)\t",
        "build\t-tags=kwok",
        'build\t-ldflags="-s -w -X k8s.io/autoscaler/cluster-autoscaler/version.ClusterAutoscalerVersion=1.36.1"',
        "build\tCGO_ENABLED=0"]))
    assert info.settings["-tags"] == "kwok" and info.settings["CGO_ENABLED"] == "0"
    assert info.settings["-ldflags"].endswith("ClusterAutoscalerVersion=1.36.1")


@pytest.fixture
def built_ca(tmp_path, monkeypatch):
    """A stand-in binary in a private cache; its build info is whatever the test says."""
    monkeypatch.setenv("TAU_DEMO_CACHE", str(tmp_path))
    c = components.CLUSTER_AUTOSCALER_BINARY
    c.bin_dir.mkdir(parents=True)
    (c.bin_dir / "cluster-autoscaler").write_bytes(b"not really a binary")

    def with_info(tags="kwok", module=versions.CLUSTER_AUTOSCALER_MODULE, stamp: str | None = None):
        info = buildinfo.BuildInfo("go1.26.8", module, module, "(devel)", {}, {"-tags": tags, "-trimpath": "true"})
        monkeypatch.setattr(buildinfo, "read_build_info", lambda path: info)
        if stamp is not None:
            (c.bin_dir / ("cluster-autoscaler" + components.CA_STAMP_SUFFIX)).write_text(stamp)
        return components.probe_cluster_autoscaler(c, "cluster-autoscaler")
    return with_info, casource.sha256_of(c.bin_dir / "cluster-autoscaler")


def test_probe_reads_the_stamp_of_exactly_this_binary(built_ca):
    probe, digest = built_ca
    assert probe(stamp=f"1.36.1 {digest} tarball") == "1.36.1"
    assert probe(stamp=f"1.35.0 {digest} tarball") == "1.35.0"           # ensure then rebuilds: wrong version


def test_probe_refuses_a_stale_stamp_a_missing_stamp_and_other_builds(built_ca):
    probe, digest = built_ca
    assert probe() is None                                               # no stamp
    assert probe(stamp="1.36.1 0000 tarball") is None                    # the binary changed since
    assert probe(tags="", stamp=f"1.36.1 {digest}") is None              # not a kwok-only build
    assert probe(module="example.com/other", stamp=f"1.36.1 {digest}") is None


def test_real_ca_is_an_extra_component():
    assert components.CLUSTER_AUTOSCALER_BINARY not in components.wanted(("kwok",))
    assert components.CLUSTER_AUTOSCALER_BINARY in components.wanted(("kwok",), ("cluster-autoscaler",))
    assert components.CLUSTER_AUTOSCALER_BINARY.dir.name == f"cluster-autoscaler-{versions.CLUSTER_AUTOSCALER}"
