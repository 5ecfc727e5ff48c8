//! (placeholder: sim semantics helper)
