//! A child naming the lower layer through `super::`.
use super::super::low::Thing;
pub fn again(thing: Thing) -> String {
    super::use_thing(thing)
}
