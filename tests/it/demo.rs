//! `endpointd demo` as a smoke test: the story runs in-process (kube-sim
//! here, the real binary as its daemon), every step's check passes, and the
//! facts it prints are right: the write counts are kube-sim's write log and
//! the memory figure is the daemon process's own.

use endpointd::demo::{self, Options};

#[test]
fn demo_story_passes_and_reports_true_figures() {
    let opts = Options {
        keep_running: false,
        exe: env!("CARGO_BIN_EXE_endpointd").into(),
    };
    let mut out = Vec::new();
    let report = demo::run(&opts, &mut out).expect("the demo runs");
    let text = String::from_utf8_lossy(&out);
    assert!(report.failures.is_empty(), "{:?}\n{text}", report.failures);
    for step in 1..=9 {
        assert!(
            text.contains(&format!("[{step}/9] ")),
            "step {step} missing:\n{text}"
        );
    }
    assert!(text.contains("every step showed what it should"), "{text}");
    assert_eq!(
        report.log_writes,
        (report.endpoints_writes, report.slice_writes),
        "per-step tallies equal the write log"
    );
    assert_eq!(report.minimum, (7, 10));
    let rss = report.rss_bytes.expect("memory of the daemon process");
    assert!(rss > 1 << 20 && rss < 256 << 20, "{rss}");
    assert_ne!(
        report.pid,
        Some(std::process::id()),
        "measured the daemon, not the test"
    );
    assert!(
        text.contains(&format!("(pid {})", report.pid.unwrap_or(0))),
        "{text}"
    );
    assert!(
        text.lines().all(|l| l.chars().count() <= 80),
        "80 columns:\n{text}"
    );
    assert!(report.endpoints_writes >= report.story_minimum.0);
    assert!(report.slice_writes >= report.story_minimum.1);
}
