//! A layer on the upper layer's level: it names only the lower one.
pub fn name() -> &'static str {
    crate::low::NAME
}
