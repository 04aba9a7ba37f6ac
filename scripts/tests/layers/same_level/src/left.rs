//! One side, naming the other.
pub struct Left(pub crate::low::Thing);
pub fn right() -> crate::right::Right {
    crate::right::Right(None)
}
