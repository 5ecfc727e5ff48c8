"""kube-sim against the official Python `kubernetes` client (37.0.2).

Covers: create/get/list/update/patch/delete of every served resource (and
the status subresources), optimistic concurrency (409 on a stale update),
API errors as ApiException with the right status and reason, watch order,
resume, live delivery, bookmarks, 410 after compaction, pagination, and
token / TLS client-certificate authentication.
"""

import json
import threading
import time
import uuid

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException


def uid(prefix="o"):
    return prefix + "-" + uuid.uuid4().hex[:8]


def reason_of(exc):
    """(HTTP status, Status.reason) of an ApiException."""
    body = json.loads(exc.body)
    assert body["kind"] == "Status", body
    assert body["code"] == exc.status, body
    return exc.status, body["reason"]


def expect_error(fn, status, reason):
    with pytest.raises(ApiException) as e:
        fn()
    assert reason_of(e.value) == (status, reason)


# ---- bodies -----------------------------------------------------------------

def pod(name, ns):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "ports": [{"name": "http", "containerPort": 8080}]}]}}


def service(name, ns):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}


def endpoints(name, ns):
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name},
            "subsets": [{"addresses": [{"ip": "10.0.0.1"}],
                         "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]}


def core_event(name, ns):
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns},
            "reason": "Testing", "message": "hello", "type": "Normal",
            "source": {"component": "conformance"}}


def endpoint_slice(name, ns):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def lease(name, ns):
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}


def events_v1(name, ns):
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "conformance/test",
            "reportingInstance": "conformance-1", "action": "Testing", "reason": "Testing",
            "type": "Normal", "note": "hello",
            "regarding": {"kind": "Pod", "name": "p", "namespace": ns}}


def node(name, ns):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "z1"}}}


def namespace(name, ns):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


# (id, API class, method suffix, namespaced, body, status patch or None)
RESOURCES = [
    ("namespaces", client.CoreV1Api, "namespace", False, namespace, None),
    ("nodes", client.CoreV1Api, "node", False, node,
     {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.9"}]}}),
    ("pods", client.CoreV1Api, "namespaced_pod", True, pod, {"status": {"phase": "Running"}}),
    ("services", client.CoreV1Api, "namespaced_service", True, service,
     {"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}}),
    ("endpoints", client.CoreV1Api, "namespaced_endpoints", True, endpoints, None),
    ("events", client.CoreV1Api, "namespaced_event", True, core_event, None),
    ("endpointslices", client.DiscoveryV1Api, "namespaced_endpoint_slice", True, endpoint_slice, None),
    ("leases", client.CoordinationV1Api, "namespaced_lease", True, lease, None),
    ("events.k8s.io", client.EventsV1Api, "namespaced_event", True, events_v1, None),
]


class Ops:
    """Uniform create/read/list/replace/patch/delete over one resource."""

    def __init__(self, api, suffix, namespaced, ns):
        self.api, self.suffix, self.namespaced, self.ns = api, suffix, namespaced, ns

    def _m(self, verb):
        return getattr(self.api, verb + "_" + self.suffix)

    def _scope(self):
        return [self.ns] if self.namespaced else []

    def create(self, body):
        return self._m("create")(*self._scope(), body)

    def read(self, name):
        return self._m("read")(name, *self._scope())

    def list(self, **kw):
        return self._m("list")(*self._scope(), **kw)

    def replace(self, name, body):
        return self._m("replace")(name, *self._scope(), body)

    def patch(self, name, body):
        return self._m("patch")(name, *self._scope(), body)

    def patch_status(self, name, body):
        return getattr(self.api, "patch_" + self.suffix + "_status")(name, *self._scope(), body)

    def delete(self, name):
        return self._m("delete")(name, *self._scope(), grace_period_seconds=0)


def wait_gone(read, name, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            read(name)
        except ApiException as e:
            assert reason_of(e) == (404, "NotFound")
            return
        time.sleep(0.1)
    raise AssertionError("%s still exists after %ss" % (name, timeout))


@pytest.mark.parametrize("rid,cls,suffix,namespaced,body,status_patch", RESOURCES,
                         ids=[r[0] for r in RESOURCES])
def test_crud(api, ns, rid, cls, suffix, namespaced, body, status_patch):
    ops = Ops(cls(api), suffix, namespaced, ns)
    name = uid(rid.split(".")[0][:8])
    created = ops.create(body(name, ns))
    meta = created.metadata
    assert meta.name == name
    assert meta.uid and meta.creation_timestamp
    assert isinstance(meta.resource_version, str) and meta.resource_version
    if namespaced:
        assert meta.namespace == ns

    got = ops.read(name)
    assert got.metadata.uid == meta.uid

    listed = ops.list()
    assert listed.metadata.resource_version
    assert name in [i.metadata.name for i in listed.items]

    # update (PUT) with the current resourceVersion
    current = api.sanitize_for_serialization(got)
    current["metadata"].setdefault("labels", {})["updated"] = "yes"
    updated = ops.replace(name, current)
    assert updated.metadata.labels["updated"] == "yes"
    assert updated.metadata.resource_version != meta.resource_version

    # a stale update conflicts
    expect_error(lambda: ops.replace(name, current), 409, "Conflict")

    # patch (strategic merge for built-in types)
    patched = ops.patch(name, {"metadata": {"labels": {"patched": "1"}}})
    assert patched.metadata.labels["patched"] == "1"
    assert patched.metadata.labels["updated"] == "yes"

    if status_patch is not None:
        st = ops.patch_status(name, status_patch)
        assert api.sanitize_for_serialization(st)["status"] is not None
        assert st.metadata.resource_version != patched.metadata.resource_version

    ops.delete(name)
    wait_gone(ops.read, name)


def test_status_subresource_ignores_spec_and_main_ignores_status(core, ns):
    name = uid("pod")
    core.create_namespaced_pod(ns, pod(name, ns))
    st = core.patch_namespaced_pod_status(name, ns, {"status": {"phase": "Running"},
                                                     "metadata": {"labels": {"via": "status"}}})
    assert st.status.phase == "Running"
    main = core.patch_namespaced_pod(name, ns, {"status": {"phase": "Failed"}})
    assert main.status.phase == "Running"


def test_api_errors_are_status_objects(core, ns):
    expect_error(lambda: core.read_namespaced_pod("missing", ns), 404, "NotFound")
    name = uid("pod")
    core.create_namespaced_pod(ns, pod(name, ns))
    expect_error(lambda: core.create_namespaced_pod(ns, pod(name, ns)), 409, "AlreadyExists")
    expect_error(lambda: core.create_namespaced_pod(ns, pod("Not_A_Valid_Name", ns)), 422, "Invalid")


def test_service_port_out_of_range_is_invalid(core, ns):
    bad_svc = service(uid("svc"), ns)
    bad_svc["spec"]["ports"][0]["port"] = 70000
    expect_error(lambda: core.create_namespaced_service(ns, bad_svc), 422, "Invalid")


def list_rv(core, ns):
    return core.list_namespaced_pod(ns).metadata.resource_version


def test_watch_replays_in_order_and_resumes(core, ns):
    rv0 = list_rv(core, ns)
    name = uid("w")
    core.create_namespaced_pod(ns, pod(name, ns))
    core.patch_namespaced_pod(name, ns, {"metadata": {"labels": {"step": "2"}}})
    core.delete_namespaced_pod(name, ns, grace_period_seconds=0)

    w = watch.Watch()
    events = []
    for ev in w.stream(core.list_namespaced_pod, ns, resource_version=rv0, timeout_seconds=5):
        events.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version))
        if ev["type"] == "DELETED":
            w.stop()
    assert [(t, n) for t, n, _ in events] == [("ADDED", name), ("MODIFIED", name), ("DELETED", name)]
    rvs = [int(rv) for _, _, rv in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3

    # Resume from the MODIFIED event's resourceVersion: only what came after.
    w2 = watch.Watch()
    resumed = []
    for ev in w2.stream(core.list_namespaced_pod, ns, resource_version=events[1][2], timeout_seconds=5):
        resumed.append(ev["type"])
        w2.stop()
    assert resumed == ["DELETED"]


def test_watch_delivers_live_events(core, ns):
    rv = list_rv(core, ns)
    w = watch.Watch()
    got = []

    def run():
        for ev in w.stream(core.list_namespaced_pod, ns, resource_version=rv, timeout_seconds=10):
            got.append((ev["type"], ev["object"].metadata.name))
            if len(got) == 2:
                w.stop()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    time.sleep(0.5)
    name = uid("live")
    core.create_namespaced_pod(ns, pod(name, ns))
    core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    t.join(10)
    assert got == [("ADDED", name), ("DELETED", name)]


def test_watch_resumes_transparently_after_server_closes_it(sim, core, ns):
    rv = list_rv(core, ns)
    w = watch.Watch()
    got = []

    def run():
        # No timeout_seconds: the client re-watches from its last
        # resourceVersion when the server ends the stream.
        for ev in w.stream(core.list_namespaced_pod, ns, resource_version=rv):
            got.append((ev["type"], ev["object"].metadata.name))
            if len(got) == 2:
                w.stop()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    a, b = uid("before"), uid("after")
    core.create_namespaced_pod(ns, pod(a, ns))
    deadline = time.time() + 10
    while not got and time.time() < deadline:
        time.sleep(0.05)
    sim.admin("/sim/faults", {"closeAllWatches": True})
    core.create_namespaced_pod(ns, pod(b, ns))
    t.join(10)
    assert got == [("ADDED", a), ("ADDED", b)]


def test_watch_bookmarks(core, ns):
    rv = list_rv(core, ns)
    w = watch.Watch()
    bookmark = None
    for ev in w.stream(core.list_namespaced_pod, ns, resource_version=rv,
                       allow_watch_bookmarks=True, timeout_seconds=5):
        if ev["type"] == "BOOKMARK":
            bookmark = ev["raw_object"]
            w.stop()
    assert bookmark is not None, "no BOOKMARK within 5s (interval 1s)"
    assert bookmark["kind"] == "Pod"
    assert isinstance(bookmark["metadata"]["resourceVersion"], str)
    assert w.resource_version == bookmark["metadata"]["resourceVersion"]


def test_410_after_compaction(sim, core, ns):
    rv_old = list_rv(core, ns)
    for _ in range(3):
        core.create_namespaced_pod(ns, pod(uid("c"), ns))
    sim.admin("/sim/faults", {"compact": True})
    with pytest.raises(ApiException) as e:
        for _ in watch.Watch().stream(core.list_namespaced_pod, ns, resource_version=rv_old,
                                      timeout_seconds=3):
            pass
    assert e.value.status == 410
    # In-stream ERROR event: reason is "Expired: <message>"; an HTTP 410
    # answer carries the Status body instead.
    if e.value.body:
        assert reason_of(e.value) == (410, "Expired")
    else:
        assert e.value.reason.startswith("Expired"), e.value.reason
    # A fresh list gives a resourceVersion that can be watched again.
    fresh = list_rv(core, ns)
    name = uid("fresh")
    core.create_namespaced_pod(ns, pod(name, ns))
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, ns, resource_version=fresh, timeout_seconds=5):
        assert (ev["type"], ev["object"].metadata.name) == ("ADDED", name)
        w.stop()


def test_pagination_returns_every_object_once(core, ns):
    names = sorted(uid("page") for _ in range(23))
    for n in names:
        core.create_namespaced_endpoints(ns, endpoints(n, ns))
    seen, token, pages = [], None, 0
    while True:
        kw = {"limit": 5}
        if token:
            kw["_continue"] = token
        page = core.list_namespaced_endpoints(ns, **kw)
        assert len(page.items) <= 5
        seen += [i.metadata.name for i in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert pages == 5
    assert sorted(seen) == names and len(seen) == len(set(seen))


def test_list_all_namespaces_and_label_selector(core, ns):
    a, b = uid("sel"), uid("sel")
    core.create_namespaced_pod(ns, pod(a, ns))
    other = pod(b, ns)
    other["metadata"]["labels"] = {"app": "db"}
    core.create_namespaced_pod(ns, other)
    names = [p.metadata.name for p in core.list_pod_for_all_namespaces(label_selector="app=db").items]
    assert b in names and a not in names


def test_wrong_or_missing_token_is_401(sim):
    for token in ("wrong", None):
        api = sim.api_client()
        assert "BearerToken" in api.configuration.api_key
        # The kubeconfig loader re-reads the token before each request.
        api.configuration.refresh_api_key_hook = None
        api.configuration.api_key.pop("authorization", None)
        if token:
            api.configuration.api_key["BearerToken"] = "Bearer " + token
        else:
            api.configuration.api_key.pop("BearerToken", None)
        with pytest.raises(ApiException) as e:
            client.CoreV1Api(api).list_namespace()
        assert reason_of(e.value) == (401, "Unauthorized")


def test_plain_http_token_auth(http_sim):
    assert http_sim.url.startswith("http://")
    api = http_sim.api_client()
    core = client.CoreV1Api(api)
    name = uid("plain")
    core.create_namespaced_pod("default", pod(name, "default"))
    assert core.read_namespaced_pod(name, "default").metadata.name == name
    api.configuration.refresh_api_key_hook = None
    api.configuration.api_key["BearerToken"] = "Bearer nope"
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod(name, "default")
    assert reason_of(e.value) == (401, "Unauthorized")


def test_client_certificate_auth(cert_sim):
    api = cert_sim.api_client()
    assert api.configuration.cert_file and not api.configuration.api_key
    names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
    assert "default" in names
    # Same CA, no client certificate and no token: rejected.
    api.configuration.cert_file = None
    api.configuration.key_file = None
    bare = client.ApiClient(api.configuration)
    with pytest.raises(ApiException) as e:
        client.CoreV1Api(bare).list_namespace()
    assert reason_of(e.value) == (401, "Unauthorized")


def test_injected_429_carries_retry_after(sim, core, ns):
    sim.admin("/sim/faults", {"failNext": {"count": 1, "verb": "get", "resource": "pods",
                                           "code": 429, "retryAfterSeconds": 1}})
    name = uid("r")
    core.create_namespaced_pod(ns, pod(name, ns))
    try:
        got = core.read_namespaced_pod(name, ns)
        # The client may retry a 429 itself after Retry-After; then it succeeds.
        assert got.metadata.name == name
    except ApiException as e:
        assert reason_of(e) == (429, "TooManyRequests")
        assert e.headers.get("Retry-After") == "1"
    counts = sim.admin("/sim/requests")["counters"]
    assert any(c["verb"] == "get" and c["resource"] == "pods" for c in counts)


# ---- formerly known semantics gaps (fixed on branch simcore) ----

def test_service_defaults(core, ns):
    name = uid("svc")
    s = core.create_namespaced_service(ns, {"apiVersion": "v1", "kind": "Service",
                                            "metadata": {"name": name},
                                            "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}})
    assert s.spec.type == "ClusterIP"
    assert s.spec.session_affinity == "None"
    assert s.spec.ports[0].protocol == "TCP"
    assert s.spec.ports[0].target_port == 80
    assert s.spec.cluster_ip and s.spec.cluster_ip != "None"


def test_new_pod_is_pending(core, ns):
    p = core.create_namespaced_pod(ns, pod(uid("pend"), ns))
    assert p.status is not None and p.status.phase == "Pending"


def test_dry_run_does_not_persist(core, ns):
    name = uid("dry")
    created = core.create_namespaced_pod(ns, pod(name, ns), dry_run="All")
    assert created.metadata.name == name
    expect_error(lambda: core.read_namespaced_pod(name, ns), 404, "NotFound")
