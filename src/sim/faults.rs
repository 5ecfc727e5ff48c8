//! (placeholder: sim transport helper)
