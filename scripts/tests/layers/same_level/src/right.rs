//! The other side, naming only the lower layer.
pub struct Right(pub Option<crate::low::Thing>);
