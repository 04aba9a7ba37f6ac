//! The upper layer.
mod a;
mod b;
