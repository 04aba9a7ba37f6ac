//! Errors of simulated-engine planning: unknown presets and engines a simulated GPU cannot run.

use crate::error::kind::ErrorKind;

/// Why a simulated engine cannot be described or run as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// No GPU preset has this id.
    #[error("unknown GPU preset {id:?} (known: {known})")]
    UnknownGpu {
        /// The id that was given.
        id: String,
        /// The known ids, comma-separated.
        known: String,
    },
    /// No model preset has this id.
    #[error("unknown model preset {id:?} (known: {known})")]
    UnknownModel {
        /// The id that was given.
        id: String,
        /// The known ids, comma-separated.
        known: String,
    },
    /// FP8 weights or an FP8 KV cache on a GPU without FP8 tensor cores (Ampere).
    #[error(
        "FP8 tensor cores are needed for {what}, and the simulated GPU {gpu} ({architecture}) has none: choose an Ada or Hopper GPU preset, or 16-bit precision"
    )]
    Fp8Unsupported {
        /// What asked for FP8.
        what: &'static str,
        /// The GPU preset id.
        gpu: String,
        /// Its architecture.
        architecture: String,
    },
    /// The weights and the runtime reserve alone exceed one GPU's memory.
    #[error(
        "the model does not fit the simulated GPU, so the engine would not load: {weights_gib:.1} GiB of weights per GPU plus {reserve_gib:.1} GiB the runtime holds leave no room for the KV cache in the {gpu}'s {memory_gib:.1} GiB; use more GPUs, FP8 weights, lower build limits or a larger GPU\n{budget}"
    )]
    DoesNotFit {
        /// The GPU preset id.
        gpu: String,
        /// Weights resident on each GPU, GiB.
        weights_gib: f64,
        /// Activations and runtime reserve, GiB.
        reserve_gib: f64,
        /// The GPU's memory, GiB.
        memory_gib: f64,
        /// The memory budget, line by line.
        budget: String,
    },
    /// An engine directory's file is missing, unreadable or not valid for its schema.
    #[error("{}: {message}", path.display())]
    EngineFile {
        /// The file (or the engine directory itself).
        path: std::path::PathBuf,
        /// What is wrong, naming the member where one is at fault.
        message: String,
    },
    /// A shape or parallelism setting that cannot work (zero sizes, heads not divisible by tp, ...).
    #[error("invalid simulated engine: {0}")]
    Invalid(String),
}

impl SimError {
    /// What kind of failure this is: always [`ErrorKind::Configuration`], a simulated engine
    /// described or set up wrong.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Configuration
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_simulated_engine_error_is_a_configuration_error() {
        let unknown = SimError::UnknownGpu { id: "x100".into(), known: "h100".into() };
        assert_eq!(unknown.kind(), ErrorKind::Configuration);
        assert_eq!(SimError::Invalid("zero layers".into()).kind(), ErrorKind::Configuration);
    }
}
