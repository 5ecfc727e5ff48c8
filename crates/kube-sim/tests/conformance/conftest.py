"""Fixtures for the kube-sim conformance suite.

Each fixture starts the real `kube-sim` binary on a free loopback port with
`--kubeconfig-out`, waits for the URL line it prints, and stops it with
SIGTERM (asserting a clean exit). Clients are built from that kubeconfig
only, exactly as a user would.
"""

import json
import os
import signal
import subprocess
import tempfile
import threading
import uuid

import pytest
from kubernetes import client, config

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KUBE_SIM = os.environ.get("KUBE_SIM", os.path.join(REPO, "target", "debug", "kube-sim"))
TOKEN = "conformance-token-" + uuid.uuid4().hex[:8]


class Sim:
    """A running kube-sim process and what clients need to reach it."""

    def __init__(self, *, tls, token, extra=()):
        self.dir = tempfile.mkdtemp(prefix="kube-sim-conf-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.cache_dir = os.path.join(self.dir, "kubectl-cache")
        args = [KUBE_SIM, "--listen", "127.0.0.1:0", "--kubeconfig-out", self.kubeconfig]
        if tls:
            args.append("--tls")
        if token:
            args += ["--token", token]
        args += list(extra)
        self.token = token
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = self._read_url(timeout=20)

    def _read_url(self, timeout):
        line = {}
        reader = threading.Thread(target=lambda: line.setdefault("v", self.proc.stdout.readline()))
        reader.daemon = True
        reader.start()
        reader.join(timeout)
        url = line.get("v", "").strip()
        if not url:
            self.proc.kill()
            raise RuntimeError("kube-sim printed no URL: " + self.proc.stderr.read())
        return url

    def api_client(self):
        """An ApiClient built from the written kubeconfig."""
        return config.new_client_from_config(config_file=self.kubeconfig)

    def admin(self, path, body=None):
        """Call a /sim/ endpoint with the kubeconfig's credentials; returns JSON."""
        api = self.api_client()
        method = "POST" if body is not None else "GET"
        params = api.param_serialize(
            method, path, body=body, auth_settings=["BearerToken"],
            header_params={"Content-Type": "application/json"} if body is not None else None,
        )
        resp = api.call_api(*params)
        resp.read()
        assert resp.status == 200, resp.data
        return json.loads(resp.data)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("kube-sim did not stop on SIGTERM")
        assert code == 0, "kube-sim exited %s: %s" % (code, self.proc.stderr.read())


@pytest.fixture(scope="session")
def sim():
    """TLS + bearer token: the main variant."""
    s = Sim(tls=True, token=TOKEN, extra=["--bookmark-interval", "1s"])
    yield s
    s.stop()


@pytest.fixture(scope="session")
def cert_sim():
    """TLS with client-certificate authentication only (no token)."""
    s = Sim(tls=True, token=None)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def http_sim():
    """Plain HTTP with a bearer token (kubectl will not send a token over
    plain HTTP, so this variant is exercised with the Python client only)."""
    s = Sim(tls=False, token=TOKEN)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def api(sim):
    return sim.api_client()


@pytest.fixture(scope="session")
def core(api):
    return client.CoreV1Api(api)


@pytest.fixture()
def ns(core):
    """A fresh namespace per test."""
    name = "t-" + uuid.uuid4().hex[:10]
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
