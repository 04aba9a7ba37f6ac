//! One half.
use super::b::B;
pub struct A(pub Option<Box<B>>);
