//! The serde helper both engine-file schemas share: a `null` member reads as absent.

use serde::Deserialize;

/// Deserializes `null` as the type's default, as the simulator does for every member ("null means absent").
pub(super) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}
