# cluster.py OUT: the e2e bench's full-size cluster (1,000 Services, 10,000 pods, 100 nodes) as a List file.
# soak.py imports `pod` from here, so its pods have the cluster's shape.
import json, sys
S, P, N = 1000, 10000, 100
def ip(i, first=1): return f"10.{first + i // 65536}.{(i // 256) % 256}.{i % 256}"
def pod(name, svc, i, addr):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "labels": {"app": f"s-{svc}"}},
            "spec": {"nodeName": f"n-{i % N}", "containers": [{"name": "c", "image": "i",
                     "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": "Running", "podIP": addr, "podIPs": [{"ip": addr}],
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
def main(out):
    items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}]
    for n in range(N):
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n-{n}", "labels": {"topology.kubernetes.io/zone": f"z-{n % 3}"}}, "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}})
    for s in range(S):
        items.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s-{s}", "namespace": "bench"}, "spec": {"selector": {"app": f"s-{s}"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
    for i in range(P):
        items.append(pod(f"p-{i}", i % S, i, ip(i)))
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(out, "w"))
if __name__ == "__main__":
    main(sys.argv[1])
