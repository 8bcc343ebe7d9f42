"""Every API resource the project talks to, declared once (group, version, plural, kind, scope)."""

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
NAMESPACE = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
JOB = Resource("batch", "v1", "jobs", "Job")
WORKLOAD = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
CLUSTER_QUEUE = Resource("kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", namespaced=False)
LOCAL_QUEUE = Resource("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue")
RESOURCE_FLAVOR = Resource("kueue.x-k8s.io", "v1beta2", "resourceflavors", "ResourceFlavor", namespaced=False)
ADMISSION_CHECK = Resource("kueue.x-k8s.io", "v1beta2", "admissionchecks", "AdmissionCheck", namespaced=False)
PROVREQ_CONFIG = Resource("kueue.x-k8s.io", "v1beta2", "provisioningrequestconfigs",
                          "ProvisioningRequestConfig", namespaced=False)
PROVREQ = Resource("autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest")
LEASE = Resource("coordination.k8s.io", "v1", "leases", "Lease")
VALIDATING_ADMISSION_POLICY = Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
                                       "ValidatingAdmissionPolicy", namespaced=False)
VALIDATING_ADMISSION_POLICY_BINDING = Resource("admissionregistration.k8s.io", "v1",
                                               "validatingadmissionpolicybindings",
                                               "ValidatingAdmissionPolicyBinding", namespaced=False)
SUBJECT_ACCESS_REVIEW = Resource("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview",
                                 namespaced=False)
