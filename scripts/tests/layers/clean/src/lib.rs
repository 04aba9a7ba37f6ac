//! Clean: every import points down.
mod high;
mod low;
pub use low::Thing;
