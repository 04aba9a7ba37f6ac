//! The upper layer.
pub fn big() -> u32 {
    1
}
