//! What a run reports: the vLLM-compatible summary built from [`super::metrics`], result files,
//! sweep tables, SVG charts and the comparison of two result files.

pub(crate) mod compare;
pub(crate) mod csv;
pub(crate) mod engine_section;
pub(crate) mod html;
pub(crate) mod layers;
pub(crate) mod lengths;
pub(crate) mod live;
pub(crate) mod output;
pub(crate) mod plot;
pub(crate) mod sections;
pub(crate) mod summary;
pub(crate) mod summary_builder;
pub(crate) mod summary_sections;
pub(crate) mod sweep;
pub(crate) mod sweep_points;
