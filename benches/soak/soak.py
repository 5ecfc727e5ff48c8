# soak.py URL MINUTES PID: 50 changes/s for MINUTES against a kube-sim on loopback (40 % pods
# created with fresh names and IPs, 40 % deleted, 20 % readiness flips, a Service deleted and created
# again every 10 s); prints the RSS of PID every 30 s, then a "done" line.
import json, os, random, sys, time, urllib.request
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import ip, pod  # noqa: E402
url, minutes, pid = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
def req(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(url + path, data=data, method=method,
                               headers={"Content-Type": "application/json"})
    try:
        return json.load(urllib.request.urlopen(r))
    except urllib.error.HTTPError as e:
        return {"code": e.code}
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"):
            return int(l.split()[1])
live = []  # names of our pods
n = 0; ops = 0; svc_cycles = 0
t0 = time.time(); nxt = t0
print("t_s rss_kib ops live", flush=True)
while time.time() - t0 < minutes * 60:
    # one second of work: ~50 ops
    for _ in range(50):
        r = random.random()
        if r < 0.4 or len(live) < 500:
            name = f"soak{int(t0)%100000}-{n}"; svc = random.randrange(1000)
            req("POST", "/api/v1/namespaces/bench/pods", pod(name, svc, n, ip(n % (50 * 65536), 200))); live.append(name); n += 1
        elif r < 0.8:
            name = live.pop(random.randrange(len(live)))
            req("DELETE", f"/api/v1/namespaces/bench/pods/{name}?gracePeriodSeconds=0")
        else:
            i = random.randrange(10000)
            p = req("GET", f"/api/v1/namespaces/bench/pods/p-{i}")
            c = p["status"]["conditions"][0]
            c["status"] = "False" if c["status"] == "True" else "True"
            req("PUT", f"/api/v1/namespaces/bench/pods/p-{i}/status", p)
        ops += 1
    # every 10 s: delete and recreate a Service (new UID)
    if int(time.time() - t0) % 10 == 0:
        s = random.randrange(1000)
        req("DELETE", f"/api/v1/namespaces/bench/services/s-{s}")
        req("POST", "/api/v1/namespaces/bench/services",
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s-{s}", "namespace": "bench"},
             "spec": {"selector": {"app": f"s-{s}"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
        svc_cycles += 1
    if time.time() >= nxt:
        print(f"{time.time() - t0:.0f} {rss()} {ops} {len(live)}", flush=True)
        nxt += 30
    time.sleep(max(0, 1 - (time.time() - t0) % 1))
print(f"done ops {ops} created {n} svc_cycles {svc_cycles} rss {rss()}", flush=True)
