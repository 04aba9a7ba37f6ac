//! An upward import hidden behind a re-export.
mod high;
mod low;
pub use high::Error;
