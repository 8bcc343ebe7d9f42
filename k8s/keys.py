"""Every label, annotation, parameter, object name and condition type/reason the project reads or
writes, declared once.  Kubernetes', Kueue's, KWOK's, the ProvisioningRequest API's and the demo's
own.  The autoscaler's condition reasons and messages are not here: they live only in
fake_ca.conditions (they are what the Cluster Autoscaler writes, not keys we look up).
"""

from __future__ import annotations

from enum import StrEnum

# ---------------------------------------------------------------------------- Kubernetes
HOSTNAME_LABEL = "kubernetes.io/hostname"
OS_LABEL = "kubernetes.io/os"
JOB_CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"      # on a Job's pods
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"                      # on a Job's pods
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
APP_NAME_LABEL = "app.kubernetes.io/name"
NODE_READY = "Ready"                                                 # Node condition type
POD_SCHEDULED = "PodScheduled"                                       # Pod condition type
POD_UNSCHEDULABLE = "Unschedulable"                                  # its reason: no node fits the pod
CRD_ESTABLISHED = "Established"                                      # CustomResourceDefinition condition type
JOB_COMPLETE, JOB_FAILED = "Complete", "Failed"                      # Job condition types
NOT_READY_TAINT = "node.kubernetes.io/not-ready"                     # kubelet registers a node with it
GPU = "nvidia.com/gpu"                                               # the extended resource of GPU nodes

# ---------------------------------------------------------------------------- Kueue v0.19.2
KUEUE_NAMESPACE = "kueue-system"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"                             # on a Workload: its Job's uid
PROVREQ_PARAM_PREFIX = "provreq.kueue.x-k8s.io/"                    # Job annotation -> ProvReq parameter
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"      # AdmissionCheck controllerName
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"               # on a Job: its WorkloadPriorityClass
KUEUE_MANAGED_LABEL = "kueue.x-k8s.io/managed"                       # "true" on the requests and templates it makes
MERGE_IDENTICAL_REQUIREMENTS = "IdenticalWorkloadSchedulingRequirements"   # a PodSetMergePolicy
# Workload condition types
ADMITTED, QUOTA_RESERVED, EVICTED, FINISHED, REQUEUED = "Admitted", "QuotaReserved", "Evicted", "Finished", "Requeued"
ACTIVE = "Active"                                                    # AdmissionCheck/ClusterQueue/MultiKueueCluster condition
# Workload condition reasons Kueue writes
DEACTIVATED = "Deactivated"                                          # an external spec.active=false
DEACTIVATED_DUE_TO_ADMISSION_CHECK = "DeactivatedDueToAdmissionCheck"
REQUEUED_BY_ADMISSION_CHECK = "AdmissionCheck"                       # Requeued=False reason in retry backoff
EVICTED_BY_ADMISSION_CHECK = "AdmissionCheck"                        # Evicted reason: a check went Retry
DEACTIVATION_TARGET = "DeactivationTarget"                           # condition Kueue sets before spec.active=false
# Kueue's metrics (pkg/metrics/metrics.go), served when metrics.bindAddress is set (demo/cluster/kueue_metrics.py)
EVICTED_WORKLOADS_METRIC = "kueue_evicted_workloads_total"           # cluster_queue, reason, underlying_cause, ...
METRICS_READER = "kueue-metrics-reader"                              # ServiceAccount (tau-demo-system) that may GET /metrics
# Workload events Kueue records
EVENT_PROVREQ_CREATED = "ProvisioningRequestCreated"
EVENT_CHECK_REJECTED = "AdmissionCheckRejected"                      # "Deactivated due to AdmissionCheck in Rejected state"
PODS_READY = "PodsReady"                                             # Workload condition (waitForPodsReady)
PODS_READY_TIMEOUT = "PodsReadyTimeout"                              # Evicted reason: not all pods Ready in time


class CheckState(StrEnum):
    """An AdmissionCheck's state in Workload.status.admissionChecks[]."""
    PENDING = "Pending"
    READY = "Ready"
    RETRY = "Retry"
    REJECTED = "Rejected"



CHECK_RESET_PREFIX = "Reset to Pending after eviction"               # message Kueue writes on a reset
# admission check messages of the provisioning controller (provisioning/constants.go, controller.go)
NO_REQUEST_NEEDED = "the provisioning request is not needed"
CHECK_INACTIVE = "the check is not active"
RETRYING_AFTER_FAILURE = "Retrying after failure: "
RETRYING_AFTER_BOOKING_EXPIRED = "Retrying after booking expired: "
EVICTED_BY_PREEMPTION = "Preempted"                                  # Evicted reason
REQUEUED_BACKOFF_FINISHED = "BackoffFinished"                        # Requeued=True reason after a retry's backoff

# MultiKueue (pkg/controller/admissionchecks/multikueue; apis/kueue/v1beta2/multikueue_types.go)
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"                 # AdmissionCheck controllerName; a manager Job's
                                                                     # spec.managedBy (Kueue's job webhook sets it)
MULTIKUEUE_SECRET_KEY = "kubeconfig"                                 # a worker's kubeconfig in its Secret
MULTIKUEUE_ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"         # on the Workloads and Jobs it makes on workers
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"    # on a worker's Job: the Workload it joins

# ---------------------------------------------------------------------------- ProvisioningRequest API
BEST_EFFORT_ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
# condition types (autoscaling.x-k8s.io/v1 types.go)
ACCEPTED, PROVISIONED, FAILED, BOOKING_EXPIRED, CAPACITY_REVOKED = (
    "Accepted", "Provisioned", "Failed", "BookingExpired", "CapacityRevoked")
PROVREQ_CONDITIONS = (ACCEPTED, PROVISIONED, FAILED, BOOKING_EXPIRED, CAPACITY_REVOKED)   # display order
CONSUME_PROVREQ_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"          # on pods
CONSUME_PROVREQ_ANNOTATION_OLD = "cluster-autoscaler.kubernetes.io/consume-provisioning-request"   # deprecated
PROVREQ_CLASS_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"                 # on pods
# parameters the real autoscaler reads
PARAM_NO_RETRY = "noRetry"                                           # check-capacity only
PARAM_PROCESSOR_INSTANCE = "processorInstance"                       # check-capacity: which autoscaler instance
PARAM_VALID_UNTIL = "ValidUntilSeconds"                              # documented, but no real CA code reads it

# ---------------------------------------------------------------------------- KWOK and the kwok cloud provider
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"                          # "fake": the kwok controller manages it
POOL_LABEL = "cluster-autoscaler.kwok.nodegroup/name"                # the kwok provider's node-group key
POD_COMPLETE_DELAY_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"

# ---------------------------------------------------------------------------- the demo's objects
DEMO_NAMESPACE = "demo"
SYSTEM_NAMESPACE = "tau-demo-system"                                 # controllers' ServiceAccounts and Leases
MARKER = (SYSTEM_NAMESPACE, "tau-demo-cluster")                      # ConfigMap: fake nodes may be made here
POOL_TABLE = (SYSTEM_NAMESPACE, "tau-demo-node-pools")               # ConfigMap the autoscaler publishes
POOL_TABLE_KEY = "pools.yaml"
CA_STATUS = ("kube-system", "cluster-autoscaler-status")             # the autoscaler's status ConfigMap
CA_STATUS_KEY = "status"
GROUP_BACKOFF = "Backoff"                                            # nodeGroups[].scaleUp.status there
PROFILE = "gpu-a100-8"                                               # the default queue profile (a LocalQueue)
DEMO_CLUSTER_QUEUE = "gpu-a100"
CHECK_NAME = "gpu-provisioning"                                      # AdmissionCheck and ProvisioningRequestConfig
DEMO_POOL = "gpupool"
ON_DEMAND_POOL = "ondemand"                                          # a CPU pool beside it (the Kueue specs)
SLOT_PREFIX = "wt-"                                                  # a walkthrough scenario's own slot: wt-<scenario>
FIELD_MANAGER = "tau-demo"
CA_FIELD_MANAGER = "cluster-autoscaler"          # the real CA's field manager (its updates, its SSA of Provisioned)
FAKE_CA_FIELD_MANAGER = "fake-ca"
FAKE_CA_LEASE = "fake-ca"
DEADLINE_LEASE_PREFIX = "deadline-"                                  # + the controller's class
SERVICE_ACCOUNTS = {"fake-ca": f"system:serviceaccount:{SYSTEM_NAMESPACE}:fake-ca",
                    "deadline": f"system:serviceaccount:{SYSTEM_NAMESPACE}:deadline",
                    "taucluster": f"system:serviceaccount:{SYSTEM_NAMESPACE}:taucluster"}

# ---------------------------------------------------------------------------- MultiKueue on one machine (issue 21)
# `tau-demo cluster up --multikueue`: the demo cluster is the manager, two kwok clusters are its workers
MULTIKUEUE_CHECK = "multikueue"                                      # the manager's AdmissionCheck and MultiKueueConfig
MULTIKUEUE_WORKERS = ("worker-1", "worker-2")                        # MultiKueueCluster names, in the config's order
MULTIKUEUE_SECRET_PREFIX = "multikueue-"                             # kueue-system/multikueue-<worker>: its kubeconfig

# ---------------------------------------------------------------------------- upstream scenarios (scenarios/upstream/)
UPSTREAM_PREFIX = "upstream-"                                        # every Kueue object they create is named so
# Kueue's own provisioning specs (scenarios/kueue_specs/): their namespace, and the prefix of their Kueue objects
SPECS_NAMESPACE = "kueue-specs"
SPEC_PREFIX = "kueue-spec-"
TAUCLUSTER_SCENARIO_PREFIX = "tc-"                                   # the taucluster group's TauClusters and profiles
GANG_OTHER_PREFIX = "gangs-other-"                                   # the gangs group's pods of another workload
SCENARIO_PREFIXES = (UPSTREAM_PREFIX, SPEC_PREFIX, TAUCLUSTER_SCENARIO_PREFIX,    # ctx.leftovers() looks for these
                     GANG_OTHER_PREFIX)
EXTERNAL_CHECK_CONTROLLER = "tau-demo.io/external-check"             # controllerName of a scenario's own check
EXTERNAL_CHECK_FIELD_MANAGER = "tau-demo-external-check"             # what that controller applies

# ---------------------------------------------------------------------------- the admission deadline
_P = "tau-demo.io/"
DEADLINE_ANNOTATION = _P + "admission-deadline"                      # on the Job: a duration like "90s"
DEADLINE_CLASS_ANNOTATION = _P + "deadline-class"                    # which controller instance handles it
DEFAULT_DEADLINE_CLASS = "default"
DECISION_ANNOTATION = _P + "admission-decision"                      # on the Workload: "timed-out"
DECISION_TIME_ANNOTATION = _P + "admission-decision-time"
DECISION_BOUND_ANNOTATION = _P + "admission-decision-bound"          # which bound fired: a demo.deadline.rule.Bound
DECISION_WAITING_ANNOTATION = _P + "admission-decision-waiting-for"  # what the Workload waited for then: ...Waiting
DEADLINE_RULE_ANNOTATION = _P + "deadline-rule"                      # on the Job: "taken-up" or "submitted"
MAX_WAIT_ANNOTATION = _P + "admission-max-wait"                      # on the Job: the outer bound, a duration
TAKEN_UP_ANNOTATION = _P + "admission-taken-up"                      # on the Workload: RFC 3339, the earliest take-up seen
TIMED_OUT = "timed-out"
TERMINAL_REASON_ANNOTATION = _P + "terminal-reason"                  # on the Job: "AdmissionTimeout"
TERMINAL_TIME_ANNOTATION = _P + "terminal-time"
TERMINAL_WORKLOAD_ANNOTATION = _P + "terminal-workload"              # which Workload's decision was mirrored
CLEANUP_AFTER_ANNOTATION = _P + "cleanup-after"                      # on the Job: RFC3339; the TTL is armed
ADMISSION_TIMEOUT = "AdmissionTimeout"
MIRROR_KEYS = (TERMINAL_REASON_ANNOTATION, TERMINAL_TIME_ANNOTATION, TERMINAL_WORKLOAD_ANNOTATION,
               CLEANUP_AFTER_ANNOTATION)

# ---------------------------------------------------------------------------- TauCluster (demo/taucluster/)
TAUCLUSTER_LABEL = _P + "taucluster"                                 # on a Kueue object a TauCluster made or adopted
TAUCLUSTER_PROFILE_LABEL = _P + "profile"                            # ... and the profile it belongs to
MODE_MANAGE, MODE_ADOPT, MODE_EXTERNAL = "Manage", "Adopt", "External"
TAUCLUSTER_ADOPTED_ANNOTATION = _P + "adopted"                       # "true": an administrator's object, taken over
TAUCLUSTER_FINALIZER = _P + "taucluster-cleanup"                     # Manage deletes, Adopt releases, then it goes
TAUCLUSTER_LEASE = "taucluster"                                      # the controller's heartbeat
DEMO_TAUCLUSTER = "demo"                                             # the demo cluster's (manifests/taucluster-demo.yaml)
PROVISIONING_READY = "ProvisioningReady"                             # the TauCluster's condition, per profile
TAUCLUSTER_CONFLICT = "Conflict"                                     # its reason: another claim holds an object

# ---------------------------------------------------------------------------- the fake autoscaler's marks
_F = "fake-ca.tau-demo.io/"
MANAGED_LABEL = _F + "managed"                                       # on nodes it created
PROVREQ_UID_ANNOTATION = _F + "provreq-uid"                          # on nodes: the request they were made for
PROVREQ_ANNOTATION = _F + "provreq"                                  # on nodes: namespace/name of that request
BATCH_ANNOTATION = _F + "batch-size"                                 # on nodes: how many nodes the request needed
UNNEEDED_ANNOTATION = _F + "unneeded-since"                          # on nodes: scale-down timer
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"               # on nodes being deleted: value unix seconds
BOOTS_AT_ANNOTATION = _F + "boots-at"                                # on nodes: RFC 3339 time the VM is up, or:
NEVER_BOOTS = "never"                                                # the VM never registers
TOPOLOGY_DOMAIN_LABEL = "topology.tau-demo.io/domain"                # the node selector Kueue sets from the domain
TOPOLOGY_LEVEL_LABEL = "topology.tau-demo.io/level"                  # on pod templates (design §10)
DOMAIN_DETAIL = "topology-domain"                                    # provisioningClassDetails key
# fault injection and deliberate differences, as ProvisioningRequest parameters (Kueue copies Job
# annotations provreq.kueue.x-k8s.io/<Param> into spec.parameters)
PARAM_BOOT_SECONDS = "fakeCABootSeconds"                             # a number of seconds, or "never"
PARAM_STOCKOUT = "fakeCAStockout"                                    # "true", or seconds until capacity returns
PARAM_REVOKE_AFTER = "fakeCARevokeAfterSeconds"                     # seconds after Provisioned=True
PARAM_REVOKE_UNPROVISIONED = "fakeCARevokeBeforeProvisionedSeconds"  # seconds after creation, never provisioned
PARAM_HONOR_VALID_UNTIL = "fakeCAHonorValidUntil"
PARAM_FAIL_ATTEMPTS = "fakeCAFailAttempts"                           # Failed on attempts 1..N (Kueue's -<attempt>)
PARAM_BOOKING_SECONDS = "fakeCABookingSeconds"                       # this request's booking (--booking)
PARAM_TTL_SECONDS = "fakeCATTLSeconds"                               # deleted this long after Provisioned/Failed

# ---------------------------------------------------------------------------- the real Cluster Autoscaler
# (cluster-autoscaler 1.36.1 with the kwok cloud provider, run out of cluster by `tau-demo real-ca`)
REAL_CA_LEASE = "real-ca"                                            # heartbeat of the `tau-demo real-ca` wrapper
REAL_CA_FIELD_MANAGER = "real-ca"                                    # what the wrapper applies (pool table, provider CMs)
REAL_CA_NAMESPACE = "kube-system"                                    # POD_NAMESPACE and --namespace of the real CA
KWOK_PROVIDER_CONFIG = "kwok-provider-config"                        # the provider's config ConfigMap (default name)
KWOK_PROVIDER_CONFIG_KEY = "config"
KWOK_PROVIDER_TEMPLATES = "kwok-provider-templates"                  # ConfigMap with the node templates
KWOK_PROVIDER_TEMPLATES_KEY = "templates"                            # the only key the provider reads
KWOK_MIN_COUNT_ANNOTATION = "cluster-autoscaler.kwok.nodegroup/min-count"    # on a template Node
KWOK_MAX_COUNT_ANNOTATION = "cluster-autoscaler.kwok.nodegroup/max-count"
CA_MAIN_LOOP_METRIC = ("cluster_autoscaler_last_activity", {"activity": "mainSuccessful"})   # after each good loop
# `tau-demo conformance`: the probes' own namespace, and the label of the free nodes a probe creates by hand
CONFORMANCE_NAMESPACE = "tau-demo-conformance"
CONFORMANCE_STATIC_LABEL = "tau-demo.io/conformance-static"         # on nodes that are no autoscaler's
QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"            # a class neither autoscaler here handles
