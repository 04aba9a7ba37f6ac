//! The lower layer.
pub struct Thing;
