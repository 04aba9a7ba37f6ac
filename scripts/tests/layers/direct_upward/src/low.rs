//! The lower layer.
pub fn small() -> u32 {
    crate::high::big() - 1
}
