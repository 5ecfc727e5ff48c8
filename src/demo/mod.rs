//! `endpointd demo`: a short story on an embedded kube-sim that shows what
//! endpointd writes, how few writes it takes, how fast it reacts and that it
//! survives a lost watch and a restart — with numbers measured in the run.
//!
//! kube-sim runs in this process on loopback; endpointd runs as the real
//! binary (`endpointd run`, leader election on, both controllers) in child
//! processes, so every figure (writes from kube-sim's write log, delays from
//! the write log's timestamps, resident memory from `/proc`) is the
//! daemon's own. Each step checks what it shows; any check that fails makes
//! the demo exit 1 with what was expected and what was seen.
//!
//! Owns the story and its checks; the rendering is in [`render`], the
//! fixtures in [`cluster`].

pub mod child;
pub mod cluster;
pub mod observe;
pub mod render;
mod story;

use std::path::PathBuf;

/// `endpointd demo` options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Leave kube-sim and endpointd running after the story, until Ctrl-C.
    pub keep_running: bool,
    /// The endpointd binary to run as the daemon (normally this one).
    pub exe: PathBuf,
}

/// Why the demo itself could not run (failed checks are in the
/// [`StoryReport`] instead).
#[derive(Debug)]
pub enum DemoError {
    /// A file or directory of the demo could not be written.
    File {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The embedded kube-sim did not start.
    Sim(kube_sim::server::SimError),
    /// kube-sim's kubeconfig could not be written.
    Kubeconfig(kube_sim::server::SimError),
    /// The cluster's objects could not be loaded.
    Load(kube_sim::load::LoadError),
    /// `endpointd preflight` could not be run.
    Preflight {
        /// The endpointd binary.
        exe: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An endpointd instance could not be started.
    Start {
        /// The endpointd binary.
        exe: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl std::fmt::Display for DemoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DemoError::File { path, source } => write!(f, "{}: {source}", path.display()),
            DemoError::Sim(e) => write!(f, "kube-sim: {e}"),
            DemoError::Kubeconfig(e) => write!(f, "kubeconfig: {e}"),
            DemoError::Load(e) => write!(f, "loading the cluster: {e}"),
            DemoError::Preflight { exe, source } => {
                write!(f, "running {} preflight: {source}", exe.display())
            }
            DemoError::Start { exe, source } => write!(f, "starting {}: {source}", exe.display()),
        }
    }
}

impl std::error::Error for DemoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DemoError::File { source, .. }
            | DemoError::Preflight { source, .. }
            | DemoError::Start { source, .. } => Some(source),
            DemoError::Sim(e) | DemoError::Kubeconfig(e) => Some(e),
            DemoError::Load(e) => Some(e),
        }
    }
}

/// Run the story, printing to `out`; `Err` only when the demo itself
/// cannot run (ports, files, processes). Failed checks are in the report.
pub fn run(opts: &Options, out: &mut dyn std::io::Write) -> Result<StoryReport, DemoError> {
    story::run(opts, out)
}

/// Run the demo, printing to stdout; the process exit code.
pub fn main(opts: &Options) -> i32 {
    let mut out = std::io::stdout();
    match story::run(opts, &mut out) {
        Ok(report) if report.failures.is_empty() => 0,
        Ok(report) => {
            println!();
            println!("The demo FAILED {} check(s):", report.failures.len());
            for f in &report.failures {
                println!("  - {f}");
            }
            1
        }
        Err(e) => {
            eprintln!("endpointd demo: {e}");
            1
        }
    }
}

/// What the demo measured (also what its test checks).
#[derive(Clone, Debug, Default)]
pub struct StoryReport {
    /// Checks that failed: "step: expected …, saw …".
    pub failures: Vec<String>,
    /// Endpoints writes over the whole story (from kube-sim's write log).
    pub endpoints_writes: usize,
    /// EndpointSlice writes over the whole story.
    pub slice_writes: usize,
    /// The fewest writes that create the cluster's objects (Endpoints,
    /// slices): what step 2 must take.
    pub minimum: (usize, usize),
    /// The fewest writes the whole story's changes allow.
    pub story_minimum: (usize, usize),
    /// Change → slice write delays of the single-pod steps.
    pub delays: Vec<std::time::Duration>,
    /// Endpoints and EndpointSlice writes in kube-sim's write log from the
    /// first endpointd start to the end, counted once more at the end
    /// (must equal the per-step tallies above).
    pub log_writes: (usize, usize),
    /// Resident memory of the last endpointd instance, from /proc.
    pub rss_bytes: Option<u64>,
    /// Its process id.
    pub pid: Option<u32>,
}
