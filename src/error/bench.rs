//! Conversions from the bench module's errors into the crate's [`Error`].

use super::Error;

macro_rules! bench_errors {
    ($($ty:ty),* $(,)?) => {$(
        impl From<$ty> for Error {
            fn from(e: $ty) -> Self {
                Error::Bench(Box::new(e))
            }
        }
    )*};
}

bench_errors!(
    crate::bench::LoadError,
    crate::bench::TraceError,
    crate::bench::DatasetError,
    crate::bench::StatsError,
    crate::bench::SloError,
    crate::bench::TimeSeriesError,
    crate::bench::OutputError,
    crate::bench::PlotError,
    crate::bench::CompareError,
    crate::bench::SummaryError,
    crate::bench::PlanningError,
    crate::bench::search::SearchError,
    crate::bench::search::SloSpecError,
    crate::bench::search::FrontPlotError,
    crate::bench::search::ReportError,
    crate::bench::search::ResultStoreError,
    crate::bench::OpenAiError,
    crate::bench::SimulationError,
);
