//! An upward import through `super::` paths.
mod high;
mod low;
