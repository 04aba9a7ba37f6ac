//! The lower layer.
mod child;
