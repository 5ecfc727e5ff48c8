//! The tests' child processes (endpointd, kube-sim): killed and reaped when
//! dropped, so that a failing test leaves nothing running behind it.
#![allow(dead_code)] // each test binary uses a different subset

use std::ops::{Deref, DerefMut};
use std::process::{Child, Command};

/// A child process killed (and reaped) when dropped. Derefs to the
/// [`Child`], so `id()`, `wait()` and the pipes work as usual; a child that
/// already exited and was waited for is left alone.
pub struct Reaped(pub Child);

impl Deref for Reaped {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// [`Command::spawn`] into a [`Reaped`].
pub trait SpawnReaped {
    fn spawn_reaped(&mut self) -> std::io::Result<Reaped>;
}

impl SpawnReaped for Command {
    fn spawn_reaped(&mut self) -> std::io::Result<Reaped> {
        self.spawn().map(Reaped)
    }
}
