//! The upper layer, through the crate root's re-export, a macro argument and a child.
mod part;
use crate::Thing;

pub fn use_thing(_: Thing) -> String {
    format!("{}", crate::low::NAME)
}
