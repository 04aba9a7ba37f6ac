//! The objectives a search point is judged by: the one SLO grammar of `bench` and `plan`
//! (`crate::bench::SloSet`), named here where the search reads it.

pub use crate::bench::metrics::slo_set::{PercentileSlo, PercentileTable, SloMetric, SloSet};
