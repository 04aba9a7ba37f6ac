//! The upper layer.
pub struct Big;
