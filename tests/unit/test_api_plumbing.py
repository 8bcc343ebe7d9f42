"""The pure plumbing under the client: API paths of every resource, errors mapped from the apiserver's
answers, manifest files read with errors that name them, and the build info read out of a Go binary."""

from __future__ import annotations

import json

import pytest

from k8s import resources as R
from k8s.errors import ApiError, Conflict, Gone, Invalid, NotFound, from_response
from k8s.manifests import ManifestError, load_manifest
from demo.toolchain import buildinfo
from demo.toolchain.buildinfo import BuildInfo, parse_modinfo


# ---------------------------------------------------------------------------- resources

@pytest.mark.parametrize("res, api_version, collection, one, sub", [
    (R.NODE, "v1", "/api/v1/nodes", "/api/v1/nodes/n1", "/api/v1/nodes/n1/status"),
    (R.CONFIG_MAP, "v1", "/api/v1/namespaces/ns/configmaps", "/api/v1/namespaces/ns/configmaps/n1",
     "/api/v1/namespaces/ns/configmaps/n1/status"),
    (R.JOB, "batch/v1", "/apis/batch/v1/namespaces/ns/jobs", "/apis/batch/v1/namespaces/ns/jobs/n1",
     "/apis/batch/v1/namespaces/ns/jobs/n1/status"),
    (R.CLUSTER_QUEUE, "kueue.x-k8s.io/v1beta2", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
     "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/n1", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/n1/status"),
    (R.PROVREQ, "autoscaling.x-k8s.io/v1", "/apis/autoscaling.x-k8s.io/v1/namespaces/ns/provisioningrequests",
     "/apis/autoscaling.x-k8s.io/v1/namespaces/ns/provisioningrequests/n1",
     "/apis/autoscaling.x-k8s.io/v1/namespaces/ns/provisioningrequests/n1/status"),
])
def test_paths_of_core_group_and_named_group_resources(res, api_version, collection, one, sub):
    ns = "ns" if res.namespaced else None
    assert res.api_version == api_version
    assert (res.path(ns), res.path(ns, "n1"), res.path(ns, "n1", "status")) == (collection, one, sub)


def test_a_namespaced_resource_without_a_namespace_is_listed_across_all_namespaces():
    assert R.POD.path() == "/api/v1/pods"
    assert R.WORKLOAD.path(None) == "/apis/kueue.x-k8s.io/v1beta2/workloads"
    assert R.NAMESPACE.path("ignored", "demo") == "/api/v1/namespaces/demo", "a cluster-scoped one has none"


def test_every_resource_is_declared_with_its_kind_and_scope():
    declared = {name: r for name, r in vars(R).items() if isinstance(r, R.Resource)}
    assert {r.kind for r in declared.values() if not r.namespaced} == {
        "Node", "Namespace", "ClusterQueue", "ResourceFlavor", "WorkloadPriorityClass", "AdmissionCheck",
        "ProvisioningRequestConfig", "MultiKueueCluster", "MultiKueueConfig",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "SubjectAccessReview", "CustomResourceDefinition",
        "TauCluster"}
    assert all(r.plural == r.plural.lower() and r.plural.endswith("s") for r in declared.values())
    assert R.Resource("", "v1", "pods", "Pod") == R.POD and R.Resource("", "v1", "pods", "Pod").namespaced


def test_a_new_object_carries_its_metadata_fields_in_metadata_and_the_rest_beside_it():
    refs = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-p"}]
    obj = R.CONFIG_MAP.new("c", "ns", labels={"a": "1"}, annotations={"b": "2"}, ownerReferences=refs, uid="u-c",
                           resourceVersion="42", data={"k": "v"})
    assert obj == {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "namespace": "ns", "labels": {"a": "1"}, "annotations": {"b": "2"},
                                "ownerReferences": refs, "uid": "u-c", "resourceVersion": "42"},
                   "data": {"k": "v"}}
    assert R.NODE.new("n") == {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}


# ---------------------------------------------------------------------------- errors

def status(code: int, reason: str, message: str) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                       "reason": reason, "code": code}).encode()


@pytest.mark.parametrize("code, reason, cls", [(404, "NotFound", NotFound), (409, "Conflict", Conflict),
                                               (410, "Expired", Gone), (422, "Invalid", Invalid),
                                               (400, "BadRequest", ApiError), (403, "Forbidden", ApiError),
                                               (429, "TooManyRequests", ApiError), (500, "InternalError", ApiError)])
def test_each_answer_becomes_its_error_type(code, reason, cls):
    e = from_response(code, status(code, reason, f"{reason.lower()} here"))
    assert type(e) is cls
    assert (e.status, e.reason, e.message) == (code, reason, f"{reason.lower()} here")
    assert str(e) == f"{code} {reason}: {reason.lower()} here"
    assert e.body["kind"] == "Status" and e.body["code"] == code


def test_a_webhook_denial_is_invalid_input():
    msg = 'admission webhook "vjob.kb.io" denied the request: spec.parallelism: Invalid value: 0'
    e = from_response(400, status(400, "BadRequest", msg))
    assert type(e) is Invalid and e.message == msg
    assert type(from_response(400, status(400, "BadRequest", "the body is no JSON"))) is ApiError


def test_an_answer_that_is_not_json_keeps_its_text():
    e = from_response(502, b"<html>bad gateway</html>")
    assert (type(e), e.status, e.reason, e.message) == (ApiError, 502, "", "<html>bad gateway</html>")
    assert e.body == {"message": "<html>bad gateway</html>"}
    long = from_response(503, b"x" * 600)
    assert long.message == "x" * 500, "at most 500 characters of it"
    assert from_response(500, b"\xff\xfe").message == "\ufffd\ufffd"


def test_an_empty_answer():
    for empty in (b"", None):
        e = from_response(500, empty)
        assert (e.status, e.reason, e.message, e.body) == (500, "", "", {})
        assert str(e) == "500 : "


def test_an_error_made_without_a_body_has_an_empty_one():
    assert ApiError(500, "r", "m").body == {}


# ---------------------------------------------------------------------------- manifests

def test_a_manifest_is_its_objects_without_empty_documents(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\n"
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: a}\n")
    assert load_manifest(f) == [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
                                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "a"}}]
    assert load_manifest(str(f))[1]["metadata"]["name"] == "b", "a path given as a string"
    (tmp_path / "empty.yaml").write_text("")
    assert load_manifest(tmp_path / "empty.yaml") == []


@pytest.mark.parametrize("text, problem", [
    ("kind: Namespace\nmetadata: {name: a}\n", "document 1 needs apiVersion, kind and metadata.name"),
    ("apiVersion: v1\nmetadata: {name: a}\n", "document 1 needs apiVersion, kind and metadata.name"),
    ("apiVersion: v1\nkind: Namespace\n", "document 1 needs apiVersion, kind and metadata.name"),
    ("apiVersion: v1\nkind: Namespace\nmetadata: a\n", "document 1 needs apiVersion, kind and metadata.name"),
    ("apiVersion: v1\nkind: Namespace\nmetadata: {namespace: a}\n", "document 1 needs apiVersion, kind and metadata.name"),
    ("apiVersion: v1\nkind: ''\nmetadata: {name: a}\n", "document 1 needs apiVersion, kind and metadata.name"),
    ("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n- 1\n",
     "document 2 needs apiVersion, kind and metadata.name"),
])
def test_an_object_without_its_identity_is_refused_naming_the_document(tmp_path, text, problem):
    f = tmp_path / "m.yaml"
    f.write_text(text)
    with pytest.raises(ManifestError) as e:
        load_manifest(f)
    assert str(e.value) == f"{f}: {problem}"


def test_a_file_that_is_not_yaml_or_cannot_be_read(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    with pytest.raises(ManifestError, match=rf"^{bad}: not valid YAML: "):
        load_manifest(bad)
    with pytest.raises(ManifestError) as e:
        load_manifest(tmp_path / "missing.yaml")
    assert str(e.value) == f"{tmp_path / 'missing.yaml'}: cannot read: No such file or directory"
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ManifestError, match=rf"^{binary}: cannot read: 'utf-8' codec can't decode"):
        load_manifest(binary)
    assert issubclass(ManifestError, ValueError)


# ---------------------------------------------------------------------------- Go build info

def uvarint(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


START, END = b"0w\xaf\x0c\x92t\x08\x02A\xe1\xc1\x07\xe6\xd6\x18\xe6", b"\xf92C1\x86\x18 r\x00\x82B\x10A\x16\xd8\xf2"
MODINFO = "\n".join(["path\tsigs.k8s.io/kwok/cmd/kwok", "mod\tsigs.k8s.io/kwok\tv0.8.0\th1:abc=",
                     "dep\tgithub.com/a/b\tv1.2.3\th1:x=", "dep\tk8s.io/api\tv0.36.3\th1:y=",
                     "=>\tk8s.io/api\tv0.36.4\th1:z=", "dep\tk8s.io/local\tv0.0.0", "=>\t../local\t(devel)",
                     "build", "build\tbroken", 'build\t-ldflags="-s -w"', 'build\tempty=""', "build\t-trimpath=true",
                     "build\tGOOS=linux"])
# what a reader that reads too far would find after the build info
BEYOND = b"\ndep\tbeyond/the/end\tv6.6.6\n" + b"\0" * 64


def go_binary(go_version: str | bytes = "go1.26.8", modinfo: str = MODINFO, flags: int = 0x2, pad: int = 1000) -> bytes:
    """The bytes of a Go >= 1.18 binary around its build info, as the linker lays it out (debug/buildinfo):
    the 32-byte header (magic, pointer size, flags), then two varint-prefixed strings, the module info
    framed by 16-byte sentinels."""
    header = buildinfo.MAGIC + bytes([8, flags]) + b"\0" * 16
    version = go_version.encode() if isinstance(go_version, str) else go_version
    mod = START + modinfo.encode() + END
    body = uvarint(len(version)) + version + uvarint(len(mod)) + mod
    return (b"\x7fELF" + b"\0" * (pad - 4) if pad else b"") + header + body + BEYOND


EXPECTED = BuildInfo("go1.26.8", "sigs.k8s.io/kwok/cmd/kwok", "sigs.k8s.io/kwok", "v0.8.0",
                     {"github.com/a/b": "v1.2.3", "k8s.io/api": "v0.36.4", "k8s.io/local": "(devel)"},
                     {"-ldflags": "-s -w", "empty": "", "-trimpath": "true", "GOOS": "linux"})


def read(tmp_path, data: bytes) -> BuildInfo | None:
    b = tmp_path / "binary"
    b.write_bytes(data)
    return buildinfo.read_build_info(b)


def test_build_info_is_read_out_of_a_binary(tmp_path):
    assert read(tmp_path, go_binary()) == EXPECTED
    assert read(tmp_path, go_binary(pad=0)) == EXPECTED, "at the very start of the file"


def test_the_first_of_two_headers_is_read(tmp_path):
    assert read(tmp_path, go_binary() + go_binary(go_version="go1.1", modinfo="path\tother")) == EXPECTED


@pytest.mark.parametrize("size", [127, 128, 129, 16383, 16384, 20000])
def test_lengths_of_one_two_and_three_varint_bytes(tmp_path, size):
    """A length is a little-endian base-128 varint: 128 is 0x80 0x01 (a first byte of exactly 0x80)."""
    deps = []
    while len("\n".join(["path\tp", "mod\tm\tv1", *deps, "build\tGOOS=linux"])) < size:
        deps.append(f"dep\texample.com/m{len(deps)}\tv1.0.{len(deps)}")
    modinfo = "\n".join(["path\tp", "mod\tm\tv1", *deps, "build\tGOOS=linux"])
    version = "v" * size
    info = read(tmp_path, go_binary(go_version=version, modinfo=modinfo))
    assert info == BuildInfo(version, "p", "m", "v1", {f"example.com/m{i}": f"v1.0.{i}" for i in range(len(deps))},
                             {"GOOS": "linux"})


@pytest.mark.parametrize("data", [
    b"\x7fELF" + b"\0" * 4000,                                    # no build info at all
    go_binary()[:1000 + 20],                                      # cut inside the header
    go_binary()[:1000 + 32],                                      # the header and nothing after it
    go_binary()[:1000 + 33 + 8],                                  # cut inside the module info's length
    go_binary(go_version="v" * 200)[:1000 + 33],                  # cut inside the Go version's length
    go_binary(flags=0x0),                                         # the pre-1.18 pointer format
    go_binary(flags=0x1),                                         # some other flag, not the inline strings
])
def test_no_build_info(tmp_path, data):
    assert read(tmp_path, data) is None


def test_a_missing_binary_has_no_build_info(tmp_path):
    assert buildinfo.read_build_info(tmp_path / "missing") is None


def test_bytes_that_are_no_utf8_are_replaced(tmp_path):
    assert read(tmp_path, go_binary(go_version=b"go1.26\xff")).go_version == "go1.26\ufffd"


def test_empty_build_info_reads_as_empty(tmp_path):
    """No Go version, and module info that is only its two sentinels (32 bytes, kept as they are): nothing known."""
    assert read(tmp_path, go_binary(go_version="", modinfo="")) == BuildInfo("", "", "", "", {}, {})


def test_short_module_info_is_kept_whole():
    """Without the sentinels (fewer than 33 bytes), the module info is taken as it is."""
    assert parse_modinfo("go1.26.8", "path\tp\nmod\tm\tv1") == BuildInfo("go1.26.8", "p", "m", "v1", {}, {})


def test_module_info_lines_that_are_short_or_unknown_are_skipped():
    info = parse_modinfo("go", "\n".join(["path", "mod\tm", "dep\td", "=>\tx\tv9", "build\tnoequals", "what\tever",
                                          'build\tquoted="a"', 'build\tone="', "build\tempty=", "build",
                                          "dep\td\tv1", "=>\tonly-two"]))
    assert info == BuildInfo("go", "", "", "", {"d": "v1"}, {"quoted": "a", "one": '"', "empty": ""})


def test_new_puts_every_metadata_field_it_takes_into_metadata():
    refs = [{"kind": "Workload", "name": "w", "uid": "u1", "controller": True}]
    obj = R.POD.new("p", "ns", labels={"a": "1"}, annotations={"b": "2"}, ownerReferences=refs, uid="u2",
                    resourceVersion="7", spec={"x": 1})
    assert obj == {"apiVersion": "v1", "kind": "Pod", "spec": {"x": 1},
                   "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1"}, "annotations": {"b": "2"},
                                "ownerReferences": refs, "uid": "u2", "resourceVersion": "7"}}
    assert R.NODE.new("n") == {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
