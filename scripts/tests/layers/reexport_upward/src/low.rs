//! The lower layer.

use crate::Error;

pub fn fails() -> Error {
    Error
}
