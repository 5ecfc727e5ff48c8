//! (placeholder: filled by issue 2)
