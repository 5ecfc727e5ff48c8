//! Who is writing: the authenticated user and `User-Agent` of the request
//! a connection thread is serving, so that the write log can say which
//! client made each write (tests prove "the standby never writes" with it).
//!
//! A thread-local set for the duration of one request; writes made outside
//! a request (garbage collection, `--load`, tests writing to the store)
//! are attributed to kube-sim itself. Never holds a credential: the user
//! is a certificate's common name, `token-user`, or `system:anonymous`.

use std::cell::RefCell;

/// The user and agent of writes made outside any request.
pub const INTERNAL: (&str, &str) = ("system:kube-sim", "kube-sim");

thread_local! {
    static WHO: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// Run `f` as a request of `user` with `user_agent`.
pub fn with<R>(user: &str, user_agent: &str, f: impl FnOnce() -> R) -> R {
    WHO.with(|w| *w.borrow_mut() = Some((user.to_string(), user_agent.to_string())));
    let r = f();
    WHO.with(|w| *w.borrow_mut() = None);
    r
}

/// The current (user, user agent).
pub fn current() -> (String, String) {
    WHO.with(|w| {
        w.borrow()
            .clone()
            .unwrap_or_else(|| (INTERNAL.0.to_string(), INTERNAL.1.to_string()))
    })
}
