//! Issue 37 item 7 (client side): a create or update whose answer is not
//! the object written — `{}`, a success `Status`, the object under another
//! name or uid, without its kind or resourceVersion — was taken as done.
//! Such an answer is now [`Error::Decode`], as an empty or HTML answer is,
//! while the write itself is stored (kube-sim's `writeAnswer` fault).

use endpointd_base::clock::RealClock;
use endpointd_kube::kube::{Client, ClientConfig, Error, ENDPOINTS};
use endpointd_kube::model::{Endpoints, Object};
use kube_sim::faults::WriteAnswer;
use kube_sim::requestinfo::Verb;
use kube_sim::server::{SimOptions, SimServer};
use std::path::Path;

fn setup() -> (SimServer, Client) {
    let sim = SimServer::start(SimOptions::default()).expect("kube-sim");
    let cfg = ClientConfig::from_kubeconfig_str(&sim.kubeconfig_yaml(), Path::new("."), None)
        .expect("kubeconfig");
    let c = Client::new(cfg, RealClock::shared(), None).expect("client");
    (sim, c)
}

fn endpoints(name: &str) -> Endpoints {
    let mut e = Endpoints::default();
    e.metadata.name = name.into();
    e.metadata.namespace = "default".into();
    e
}

#[test]
fn a_write_answered_with_another_object_is_undecodable() {
    let (sim, c) = setup();
    // (answer, whether a create so answered is caught, whether an update is)
    let table = [
        (WriteAnswer::Empty, true, true),
        (WriteAnswer::Status, true, true),
        (WriteAnswer::Renamed, true, true),
        // A create's uid is the server's to choose: only an update can
        // tell another one.
        (WriteAnswer::OtherUid, false, true),
        (WriteAnswer::NoKind, true, true),
        (WriteAnswer::NoResourceVersion, true, true),
    ];
    for (i, (answer, create_caught, update_caught)) in table.into_iter().enumerate() {
        let name = format!("e{i}");
        let faults = sim.faults();
        faults.answer_writes(1, Some(Verb::Create), Some("endpoints".into()), answer);
        let got = c.create_meta(&ENDPOINTS, Some("default"), &endpoints(&name));
        assert_eq!(
            matches!(got, Err(Error::Decode { .. })),
            create_caught,
            "create answered {answer:?}: {got:?}"
        );
        let mut stored: Endpoints = c
            .get(&ENDPOINTS, Some("default"), &name)
            .expect("the create was stored");
        stored.metadata.labels.insert("step", "1");
        faults.answer_writes(1, Some(Verb::Update), Some("endpoints".into()), answer);
        let got = c.update_meta(&ENDPOINTS, Some("default"), &stored);
        assert_eq!(
            matches!(got, Err(Error::Decode { .. })),
            update_caught,
            "update answered {answer:?}: {got:?}"
        );
        if let Err(e) = got {
            assert!(e.to_string().contains("the answer to update"), "{e}");
        }
        let mut after: Endpoints = c.get(&ENDPOINTS, Some("default"), &name).expect("get");
        after.metadata.labels.insert("step", "2");
        assert_ne!(
            after.resource_version(),
            stored.resource_version(),
            "the update was stored"
        );
        // The whole-object calls check alike.
        faults.answer_writes(1, Some(Verb::Update), Some("endpoints".into()), answer);
        let got = c.update(&ENDPOINTS, Some("default"), &after);
        assert_eq!(
            matches!(got, Err(Error::Decode { .. })),
            update_caught,
            "whole update answered {answer:?}: {got:?}"
        );
    }
    // Ordinary answers pass.
    let e = c
        .create_meta(&ENDPOINTS, Some("default"), &endpoints("plain"))
        .expect("create");
    assert_eq!(e.metadata.name, "plain");
}
