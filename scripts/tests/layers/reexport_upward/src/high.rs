//! The upper layer.
pub struct Error;
