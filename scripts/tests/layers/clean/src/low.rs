//! The lower layer.
pub struct Thing;
pub const NAME: &str = "thing";

#[cfg(test)]
mod tests {
    use crate::high::use_thing;
}
