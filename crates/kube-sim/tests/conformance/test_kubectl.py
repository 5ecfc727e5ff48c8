"""kube-sim against the real kubectl (on the PATH): apply -f, get -o json,
get -w, label, annotate, describe, delete, wait --for=delete.

kubectl runs with --kubeconfig from `kube-sim --kubeconfig-out` and a
temporary --cache-dir, so cached discovery never hides simulator changes.
"""

import json
import os
import shutil
import subprocess
import threading
import time
import uuid

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")


def kubectl(sim, *args, check=True, timeout=30, stdin=None):
    cmd = ["kubectl", "--kubeconfig", sim.kubeconfig, "--cache-dir", sim.cache_dir] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=stdin)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\nstdout: %s\nstderr: %s"
                             % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def manifest(ns, pod_name, label="v1"):
    return """
apiVersion: v1
kind: Namespace
metadata:
  name: %(ns)s
---
apiVersion: v1
kind: Pod
metadata:
  name: %(pod)s
  namespace: %(ns)s
  labels:
    app: web
    rev: %(label)s
spec:
  containers:
  - name: c
    image: busybox
    ports:
    - name: http
      containerPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: %(ns)s
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: http
""" % {"ns": ns, "pod": pod_name, "label": label}


@pytest.fixture()
def applied(sim, tmp_path):
    ns = "k-" + uuid.uuid4().hex[:8]
    path = tmp_path / "app.yaml"
    path.write_text(manifest(ns, "web-0"))
    out = kubectl(sim, "apply", "-f", str(path)).stdout
    assert "namespace/%s created" % ns in out, out
    assert "pod/web-0 created" in out, out
    assert "service/web created" in out, out
    return ns, path


def test_apply_is_idempotent_and_reconfigures(sim, applied):
    ns, path = applied
    out = kubectl(sim, "apply", "-f", str(path)).stdout
    assert "pod/web-0 unchanged" in out, out
    path.write_text(manifest(ns, "web-0", label="v2"))
    out = kubectl(sim, "apply", "-f", str(path)).stdout
    assert "pod/web-0 configured" in out, out
    pod = json.loads(kubectl(sim, "-n", ns, "get", "pod", "web-0", "-o", "json").stdout)
    assert pod["metadata"]["labels"]["rev"] == "v2"
    assert "kubectl.kubernetes.io/last-applied-configuration" in pod["metadata"]["annotations"]


def test_get_json_label_annotate_describe(sim, applied):
    ns, _ = applied
    lst = json.loads(kubectl(sim, "-n", ns, "get", "pods", "-o", "json").stdout)
    assert lst["kind"] == "List" or lst["kind"] == "PodList"
    assert [i["metadata"]["name"] for i in lst["items"]] == ["web-0"]
    svc = json.loads(kubectl(sim, "-n", ns, "get", "svc", "web", "-o", "json").stdout)
    assert svc["spec"]["ports"][0]["port"] == 80

    kubectl(sim, "-n", ns, "label", "pod", "web-0", "tier=front")
    kubectl(sim, "-n", ns, "annotate", "pod", "web-0", "note=hello")
    got = kubectl(sim, "-n", ns, "get", "pod", "web-0", "-o",
                  "jsonpath={.metadata.labels.tier}/{.metadata.annotations.note}").stdout
    assert got == "front/hello"
    by_label = kubectl(sim, "-n", ns, "get", "pods", "-l", "tier=front", "-o", "name").stdout
    assert by_label.split() == ["pod/web-0"]

    desc = kubectl(sim, "-n", ns, "describe", "pod", "web-0").stdout
    assert "Name:" in desc and "web-0" in desc and "tier=front" in desc
    kubectl(sim, "-n", ns, "describe", "service", "web")
    kubectl(sim, "get", "nodes")
    kubectl(sim, "get", "endpointslices", "-A")
    kubectl(sim, "get", "leases", "-A")


def test_get_watch_sees_new_objects(sim, applied):
    ns, _ = applied
    cmd = ["kubectl", "--kubeconfig", sim.kubeconfig, "--cache-dir", sim.cache_dir,
           "-n", ns, "get", "pods", "-w", "-o", "name"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: [lines.append(l.strip()) for l in proc.stdout], daemon=True)
    reader.start()
    try:
        deadline = time.time() + 15
        while "pod/web-0" not in lines and time.time() < deadline:
            time.sleep(0.1)
        assert "pod/web-0" in lines, lines
        kubectl(sim, "-n", ns, "run", "late", "--image=busybox", "--restart=Never")
        while "pod/late" not in lines and time.time() < deadline:
            time.sleep(0.1)
        assert "pod/late" in lines, (lines, proc.stderr)
    finally:
        proc.terminate()
        proc.wait(5)


def test_delete_and_wait_for_delete(sim, applied):
    ns, _ = applied
    kubectl(sim, "-n", ns, "delete", "pod", "web-0", "--wait=false")
    kubectl(sim, "-n", ns, "wait", "--for=delete", "pod/web-0", "--timeout=20s", timeout=40)
    p = kubectl(sim, "-n", ns, "get", "pod", "web-0", check=False)
    assert p.returncode != 0 and "NotFound" in p.stderr, p.stderr
    kubectl(sim, "delete", "namespace", ns, "--wait=false")
    kubectl(sim, "wait", "--for=delete", "namespace/" + ns, "--timeout=20s", timeout=40)


def test_client_certificate_kubeconfig(cert_sim):
    out = kubectl(cert_sim, "get", "namespaces", "-o", "name").stdout.split()
    assert "namespace/default" in out
    who = kubectl(cert_sim, "auth", "whoami", check=False)
    # kube-sim does not serve SelfSubjectReview; failing cleanly is fine.
    assert who.returncode in (0, 1)
