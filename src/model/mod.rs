//! Trimmed API object projections (placeholder, issue 4).
