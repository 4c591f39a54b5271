//! A ClusterQueue's `namespaceSelector` against a namespace's labels read from Namespace
//! objects (a `kubectl get namespaces -o yaml` List) given with the queue files.

use ops::kueue_admit::{queues, read_objects, resolve, Resolved};

const QUEUES: &str = "\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: research}
spec:
  namespaceSelector:
    matchLabels: {team: research}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: lab}
spec: {clusterQueue: research}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: other}
spec: {clusterQueue: research}
";

const NAMESPACES: &str = "\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: lab
    labels: {team: research, kubernetes.io/metadata.name: lab}
- apiVersion: v1
  kind: Namespace
  metadata: {name: other, labels: {team: web}}
";

#[test]
fn namespace_labels_from_namespace_objects_meet_the_selector() {
    let files = [
        ("queues.yaml".to_owned(), QUEUES.to_owned()),
        ("namespaces.yaml".to_owned(), NAMESPACES.to_owned()),
    ];
    let objects = read_objects(&files).unwrap().unwrap();
    assert_eq!(objects.namespaces["lab"]["team"], "research");
    let q = queues(&objects, &[]).unwrap();
    assert_eq!(
        resolve(&objects, &q, "lab", "lq"),
        Some(Resolved::ClusterQueue("research".to_owned()))
    );
    let refused = Some(Resolved::Inadmissible(
        "workload namespace doesn't match ClusterQueue selector".to_owned(),
    ));
    assert_eq!(resolve(&objects, &q, "other", "lq"), refused);
    // Without the Namespace objects only `kubernetes.io/metadata.name` is known: refused.
    let objects = read_objects(&files[..1]).unwrap().unwrap();
    let q = queues(&objects, &[]).unwrap();
    assert_eq!(resolve(&objects, &q, "lab", "lq"), refused);
}
