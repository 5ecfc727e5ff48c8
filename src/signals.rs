//! Unix signals → actions, on one thread (signal-hook's iterator).
//!
//! SIGTERM / SIGINT: the first triggers the shared [`Shutdown`]; a second
//! one forces exit (status 128 + signal). SIGHUP: calls the reload callback.
//! Owns the signal thread only; it never does the reload work itself.

use endpointd_kube::shutdown::Shutdown;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};
use std::io;

/// What a received signal means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Begin graceful shutdown.
    Shutdown,
    /// Exit now with this status.
    ForceExit(i32),
    /// Re-read the configuration.
    Reload,
    /// Nothing.
    Ignore,
}

/// Pure decision: the action for `sig`, given whether shutdown already began.
pub fn action_for(sig: i32, shutting_down: bool) -> Action {
    match sig {
        SIGTERM | SIGINT if shutting_down => Action::ForceExit(128 + sig),
        SIGTERM | SIGINT => Action::Shutdown,
        SIGHUP => Action::Reload,
        _ => Action::Ignore,
    }
}

/// The running signal thread; dropping it does not stop it, call [`SignalThread::close`].
#[derive(Debug)]
pub struct SignalThread {
    handle: Handle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SignalThread {
    /// Stop listening and join the thread.
    pub fn close(mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Start the signal thread.
pub fn install(shutdown: Shutdown, reload: impl Fn() + Send + 'static) -> io::Result<SignalThread> {
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    let handle = signals.handle();
    let thread = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                match action_for(sig, shutdown.is_triggered()) {
                    Action::Shutdown => {
                        log::info!("received signal {sig}: shutting down gracefully (send it again to force exit)");
                        shutdown.trigger();
                    }
                    Action::ForceExit(code) => {
                        log::warn!("received signal {sig} again: exiting now");
                        std::process::exit(code);
                    }
                    Action::Reload => reload(),
                    Action::Ignore => {}
                }
            }
        })?;
    Ok(SignalThread {
        handle,
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions() {
        let cases = [
            (SIGTERM, false, Action::Shutdown),
            (SIGINT, false, Action::Shutdown),
            (SIGTERM, true, Action::ForceExit(143)),
            (SIGINT, true, Action::ForceExit(130)),
            (SIGHUP, false, Action::Reload),
            (SIGHUP, true, Action::Reload),
            (10, false, Action::Ignore),
        ];
        for (sig, down, want) in cases {
            assert_eq!(action_for(sig, down), want, "{sig} {down}");
        }
    }
}
