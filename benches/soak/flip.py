# flip.py KUBECONFIG N RATE: N readiness flips of the cluster's pods (cluster.py) at RATE a second,
# through the kubeconfig's server on one keep-alive connection: HTTPS verified against the
# kubeconfig's CA, or plain HTTP; a bearer token if the kubeconfig has one. kube-sim writes its
# kubeconfigs flat (one key a line), which is all this reads.
import base64, http.client, json, ssl, sys, time, urllib.parse
kc, n, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
fields = {}
for line in open(kc):
    key, _, value = line.strip().lstrip("- ").partition(":")
    fields.setdefault(key, value.strip().strip('"'))
u = urllib.parse.urlparse(fields["server"])
if u.scheme == "https":
    ca = base64.b64decode(fields["certificate-authority-data"]).decode()
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ssl.create_default_context(cadata=ca))
else:
    conn = http.client.HTTPConnection(u.hostname, u.port)
headers = {"Content-Type": "application/json"}
if fields.get("token"):
    headers["Authorization"] = "Bearer " + fields["token"]
def req(method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        sys.exit(f"{method} {path}: HTTP {r.status}")
    return json.loads(data)
t0 = time.time()
for i in range(n):
    name = f"p-{(i * 7919) % 10000}"
    p = req("GET", f"/api/v1/namespaces/bench/pods/{name}")
    c = p["status"]["conditions"][0]
    c["status"] = "False" if c["status"] == "True" else "True"
    req("PUT", f"/api/v1/namespaces/bench/pods/{name}/status", p)
    time.sleep(max(0.0, t0 + (i + 1) / rate - time.time()))
print(f"flips {n} in {time.time() - t0:.1f} s")
