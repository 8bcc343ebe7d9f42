"""Every API resource the project talks to, and every other typed document it writes (config files, lists,
options), declared once: group, version, plural, kind, scope.  Nothing else in the project types an
apiVersion: objects are made with Resource.new / Kind.doc (a unit test keeps it so)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    group: str           # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def crd_name(self) -> str:
        """The name of the CustomResourceDefinition that serves it (a custom resource's)."""
        return f"{self.plural}.{self.group}"

    def new(self, name: str, namespace: str | None = None, **fields) -> dict:
        """A new object of this resource: apiVersion, kind, metadata (name, namespace), then `fields`
        (labels=..., annotations=... go into metadata)."""
        md: dict = {"name": name}
        if namespace is not None:
            md["namespace"] = namespace
        for key in ("labels", "annotations", "ownerReferences", "uid", "resourceVersion"):
            if key in fields:
                md[key] = fields.pop(key)
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": md, **fields}

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


NODE = Resource("", "v1", "nodes", "Node", namespaced=False)
EVENT = Resource("", "v1", "events", "Event")
POD = Resource("", "v1", "pods", "Pod")
POD_TEMPLATE = Resource("", "v1", "podtemplates", "PodTemplate")
CONFIG_MAP = Resource("", "v1", "configmaps", "ConfigMap")
SECRET = Resource("", "v1", "secrets", "Secret")
NAMESPACE = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SERVICE_ACCOUNT = Resource("", "v1", "serviceaccounts", "ServiceAccount")
JOB = Resource("batch", "v1", "jobs", "Job")
WORKLOAD = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
CLUSTER_QUEUE = Resource("kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", namespaced=False)
LOCAL_QUEUE = Resource("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue")
RESOURCE_FLAVOR = Resource("kueue.x-k8s.io", "v1beta2", "resourceflavors", "ResourceFlavor", namespaced=False)
WORKLOAD_PRIORITY_CLASS = Resource("kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", "WorkloadPriorityClass",
                                   namespaced=False)
ADMISSION_CHECK = Resource("kueue.x-k8s.io", "v1beta2", "admissionchecks", "AdmissionCheck", namespaced=False)
PROVREQ_CONFIG = Resource("kueue.x-k8s.io", "v1beta2", "provisioningrequestconfigs",
                          "ProvisioningRequestConfig", namespaced=False)
MULTIKUEUE_CLUSTER = Resource("kueue.x-k8s.io", "v1beta2", "multikueueclusters", "MultiKueueCluster", namespaced=False)
MULTIKUEUE_CONFIG = Resource("kueue.x-k8s.io", "v1beta2", "multikueueconfigs", "MultiKueueConfig", namespaced=False)
PROVREQ = Resource("autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest")
LEASE = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CRD = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False)
TAUCLUSTER = Resource("tau-demo.io", "v1alpha1", "tauclusters", "TauCluster", namespaced=False)   # manifests/taucluster-crd.yaml
VALIDATING_ADMISSION_POLICY = Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
                                       "ValidatingAdmissionPolicy", namespaced=False)
VALIDATING_ADMISSION_POLICY_BINDING = Resource("admissionregistration.k8s.io", "v1",
                                               "validatingadmissionpolicybindings",
                                               "ValidatingAdmissionPolicyBinding", namespaced=False)
SUBJECT_ACCESS_REVIEW = Resource("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview",
                                 namespaced=False)


@dataclass(frozen=True)
class Kind:
    """A typed document that is no resource the project calls: a request body, a list, a config file."""
    api_version: str
    kind: str

    def doc(self, **fields) -> dict:
        return {"apiVersion": self.api_version, "kind": self.kind, **fields}


DELETE_OPTIONS = Kind("v1", "DeleteOptions")
TOKEN_REQUEST = Kind("authentication.k8s.io/v1", "TokenRequest")       # POST .../serviceaccounts/<name>/token
LIST = Kind("v1", "List")
KUBECONFIG = Kind("v1", "Config")                                        # a kubeconfig file (a worker's, MultiKueue)
KWOKCTL_CONFIGURATION = Kind("config.kwok.x-k8s.io/v1alpha1", "KwokctlConfiguration")
NODE_POOL_LIST = Kind("tau-demo.io/v1", "NodePoolList")                 # the node pools file (k8s/pools.py)
WALKTHROUGH_SLOTS = Kind("tau-demo.io/v1", "WalkthroughSlots")          # manifests/walkthrough-slots.yaml
KWOK_PROVIDER_CONFIG_VERSION = "v1alpha1"                               # the kwok cloud provider's config document
