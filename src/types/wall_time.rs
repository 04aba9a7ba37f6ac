//! Instants as wall-clock time in serialized outputs: seconds since the Unix epoch (an `f64`),
//! through one anchor (an `Instant` and the `SystemTime` read with it) taken when first needed.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn anchor() -> (Instant, SystemTime) {
    static ANCHOR: OnceLock<(Instant, SystemTime)> = OnceLock::new();
    *ANCHOR.get_or_init(|| (Instant::now(), SystemTime::now()))
}

/// The wall-clock time of `at`.
fn system_time(at: Instant) -> SystemTime {
    let (instant, system) = anchor();
    match at.checked_duration_since(instant) {
        Some(after) => system + after,
        None => system - (instant - at),
    }
}

fn unix_seconds(at: Instant) -> f64 {
    system_time(at).duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Serializes an `Instant` as seconds since the Unix epoch.
pub(crate) fn instant<S: serde::Serializer>(at: &Instant, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(unix_seconds(*at))
}

/// Serializes an optional `Instant` as seconds since the Unix epoch, or null.
pub(crate) fn optional_instant<S: serde::Serializer>(at: &Option<Instant>, serializer: S) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => serializer.serialize_some(&unix_seconds(*at)),
        None => serializer.serialize_none(),
    }
}
