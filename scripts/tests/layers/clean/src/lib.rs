//! Clean: every import points down.
mod high;
mod low;
mod side;
pub use low::Thing;
