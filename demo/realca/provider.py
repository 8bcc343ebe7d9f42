"""The kwok cloud provider's two ConfigMaps, generated from the node pools file (pure).

The real Cluster Autoscaler's kwok provider reads, from $POD_NAMESPACE:

- `kwok-provider-config`, key `config`: where the node templates are (`readNodesFrom: configmap`), how
  nodes are grouped into node groups (exactly one of `fromNodeLabelKey`/`fromNodeAnnotationKey`), and
  `nodes.skipTaint`;
- `kwok-provider-templates`, key `templates`: the template Nodes, one per node group, as a `kind: List`
  (a single bare Node document is rejected; two templates with the same group name would silently raise
  the group's initial target size).

Each pool becomes one node group whose template is made by the fake autoscaler's one Node builder
(k8s.pools.node_manifest, kwok_provider_template=True), so it has what the fake's nodes have: the pool's labels, `kubernetes.io/os`, `type: kwok`, the pool label
`cluster-autoscaler.kwok.nodegroup/name=<pool>` (also the grouping key, so both autoscalers' nodes are
found with the same selector), the pool's taints and capacity/allocatable, min/max from the pool.  So the
same Jobs fit the same way.  On purpose the template has:

- no `kubernetes.io/hostname`: the provider copies template labels verbatim, so every node would share
  one hostname (the fake sets it to the node name: a documented difference);
- no `status.conditions`: kwok's node-initialize stage makes the node Ready;
- `skipTaint: true`: otherwise every node gets `kwok-provider=true:NoSchedule`, which the demo's
  ResourceFlavor does not tolerate;
- no topology domain label: one node group per pool cannot put all new nodes in one domain, and the real
  autoscaler never publishes provisioningClassDetails (Kueue's podSetUpdates then find nothing).
"""

from __future__ import annotations

from typing import Any

import yaml

from k8s.keys import (KWOK_PROVIDER_CONFIG, KWOK_PROVIDER_CONFIG_KEY, KWOK_PROVIDER_TEMPLATES,
                           KWOK_PROVIDER_TEMPLATES_KEY, MANAGED_BY_LABEL, POOL_LABEL, REAL_CA_NAMESPACE)
from k8s.resources import CONFIG_MAP, KWOK_PROVIDER_CONFIG_VERSION, LIST
from k8s.pools import Pool, node_manifest

TEMPLATE_SUFFIX = "-template"          # the provider renames a template to kwok-fake-<name>


def provider_config() -> dict[str, Any]:
    """The provider's `config` document."""
    return {
        "apiVersion": KWOK_PROVIDER_CONFIG_VERSION,
        "readNodesFrom": "configmap",
        "nodegroups": {"fromNodeLabelKey": POOL_LABEL},
        "nodes": {"skipTaint": True},
        "configmap": {"name": KWOK_PROVIDER_TEMPLATES},
    }


def node_template(pool: Pool) -> dict[str, Any]:
    """The template Node of one pool's node group: the fake's one Node builder, as a kwok provider template."""
    return node_manifest(pool, pool.name + TEMPLATE_SUFFIX, kwok_provider_template=True)


def templates_document(pools: list[Pool]) -> dict[str, Any]:
    return LIST.doc(items=[node_template(p) for p in pools])


def configmaps(pools: list[Pool], namespace: str = REAL_CA_NAMESPACE) -> list[dict[str, Any]]:
    """The two ConfigMaps, ready to apply (config first)."""
    if not pools:
        raise ValueError("no node pools: the kwok provider needs at least one node group")
    def cm(name: str, key: str, doc: dict) -> dict[str, Any]:
        return CONFIG_MAP.new(name, namespace, labels={MANAGED_BY_LABEL: "tau-demo"},
                              data={key: yaml.safe_dump(doc, sort_keys=False)})
    return [cm(KWOK_PROVIDER_CONFIG, KWOK_PROVIDER_CONFIG_KEY, provider_config()),
            cm(KWOK_PROVIDER_TEMPLATES, KWOK_PROVIDER_TEMPLATES_KEY, templates_document(pools))]
