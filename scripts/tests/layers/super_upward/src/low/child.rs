//! A child of the lower layer.
use super::super::high::Big;

pub fn make() -> Big {
    Big
}
