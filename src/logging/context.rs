//! What a thread is doing, for the journal's structured fields: the
//! controller it works for (set once per thread) and the Service it is
//! syncing (set for the length of one sync). Read by the logger only; it
//! never changes what is logged, only which fields a journal record
//! carries.

use std::cell::RefCell;

thread_local! {
    static CONTROLLER: RefCell<Option<&'static str>> = const { RefCell::new(None) };
    static SERVICE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// This thread works for `controller` (`endpoints`, `endpointslice`,
/// `lease`) from now on.
pub fn set_controller(controller: &'static str) {
    CONTROLLER.with(|c| *c.borrow_mut() = Some(controller));
}

/// This thread's controller, if set.
pub fn controller() -> Option<&'static str> {
    CONTROLLER.try_with(|c| *c.borrow()).ok().flatten()
}

/// Until the guard drops, this thread's records are about Service `key`
/// (`namespace/name`).
pub fn service(key: &str) -> ServiceGuard {
    SERVICE.with(|s| *s.borrow_mut() = Some(key.to_string()));
    ServiceGuard(())
}

/// The Service this thread's records are about, if any, given to `f`.
pub fn with_service<R>(f: impl FnOnce(Option<&str>) -> R) -> R {
    match SERVICE.try_with(|s| s.borrow().clone()) {
        Ok(s) => f(s.as_deref()),
        Err(_) => f(None),
    }
}

/// Ends a [`service`] scope.
#[derive(Debug)]
pub struct ServiceGuard(());

impl Drop for ServiceGuard {
    fn drop(&mut self) {
        let _ = SERVICE.try_with(|s| s.borrow_mut().take());
    }
}
