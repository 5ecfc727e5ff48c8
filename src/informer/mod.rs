//! Informers: reflectors, stores and event handlers (placeholder, issue 4).
