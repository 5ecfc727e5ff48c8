# check.py URL: every Service's Endpoints and its one slice match its pods (prints "mismatched N").
import json, sys, urllib.request, collections
url = sys.argv[1]
def get(p): return json.load(urllib.request.urlopen(url + p))
pods = get("/api/v1/namespaces/bench/pods")["items"]
svcs = {s["metadata"]["name"]: s for s in get("/api/v1/namespaces/bench/services")["items"]}
eps = {e["metadata"]["name"]: e for e in get("/api/v1/namespaces/bench/endpoints")["items"]}
sls = get("/apis/discovery.k8s.io/v1/namespaces/bench/endpointslices")["items"]
want = collections.defaultdict(lambda: (set(), set()))
for p in pods:
    if p["metadata"].get("deletionTimestamp"): continue
    app = p["metadata"].get("labels", {}).get("app")
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
    want[app][0 if ready else 1].add(p["status"]["podIP"])
bad = 0
by_svc = collections.defaultdict(lambda: (set(), set(), 0))
for s in sls:
    name = s["metadata"]["labels"].get("kubernetes.io/service-name")
    r, nr, n = by_svc[name]
    for e in s.get("endpoints") or []:
        (r if e["conditions"].get("ready") else nr).add(e["addresses"][0])
    by_svc[name] = (r, nr, n + 1)
for name in svcs:
    w = want[svcs[name]["spec"]["selector"]["app"]]
    e = eps.get(name)
    er, enr = set(), set()
    for sub in (e or {}).get("subsets") or []:
        er |= {a["ip"] for a in sub.get("addresses") or []}
        enr |= {a["ip"] for a in sub.get("notReadyAddresses") or []}
    sr, snr, n = by_svc[name]
    if (er, enr) != w or (sr, snr) != w or n != 1:
        bad += 1
        if bad < 5: print("mismatch", name, len(w[0]), len(w[1]), len(er), len(enr), len(sr), len(snr), n)
extra = [n for n in by_svc if n not in svcs]
print(f"services {len(svcs)} mismatched {bad} slices {len(sls)} orphan-slice services {len(extra)} endpoints {len(eps)}")
sys.exit(1 if bad or extra else 0)
