//! The summary's `engine` section: what served the run, with the same keys whichever way the
//! bench reached it (the engine config in process, GetModelInfo/GetServerInfo over gRPC, an
//! OpenAI endpoint's model list), each written only when that source says it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::proto::trtllm as pb;
use crate::{Backend, CacheTransceiverConfig, EngineConfig, ExecutorConfig, KvLink};

/// The summary's `engine`.
///
/// ```rust
/// use trtllm::bench::EngineSection;
///
/// let engine = EngineSection { model_id: "tiny".into(), tp_size: Some(2), ..EngineSection::new("a test") };
/// let json = serde_json::to_value(&engine).unwrap();
/// assert_eq!(json, serde_json::json!({"source": "a test", "model_id": "tiny", "tp_size": 2, "gpu": null}));
/// assert!(engine.settings().contains(&("tp_size", "2".to_string())));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineSection {
    /// Where the description comes from.
    pub source: String,
    /// The target's address (not in process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The OpenAI API path (`/v1/chat/completions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// The model's name.
    pub model_id: String,
    /// The longest prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_input_len: Option<i64>,
    /// The longest sequence (prompt and output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_seq_len: Option<i64>,
    /// The most requests in a batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_batch_size: Option<i64>,
    /// Vocabulary size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vocab_size: Option<i64>,
    /// Hidden size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_size: Option<i64>,
    /// Decoder layers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_layers: Option<i64>,
    /// Attention heads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_heads: Option<i64>,
    /// Tensor-parallel ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tp_size: Option<i64>,
    /// Pipeline-parallel ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pp_size: Option<i64>,
    /// Context-parallel ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cp_size: Option<i64>,
    /// `simulated`, `tensorrt-llm`, or the server's backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// The backend's version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_version: Option<String>,
    /// The simulated GPU preset (`null` when not known).
    pub gpu: Option<String>,
    /// The engine config as `trtllm inspect` prints it (in process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// The executor's whole configuration (in process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executor: Option<Value>,
    /// The features the server says it supports (gRPC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<Vec<String>>,
    /// The prefill and decode pools (`--disagg`, `--prefill-target`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disaggregation: Option<DisaggSetup>,
    /// The draft-target loop (`--draft-engine-dir`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft_target: Option<DraftTargetSetup>,
}

impl EngineSection {
    /// An empty description from `source`.
    pub fn new(source: &str) -> Self {
        EngineSection { source: source.into(), ..EngineSection::default() }
    }

    /// The engine an in-process executor loaded, its backend, the simulated GPU and the
    /// executor's configuration.
    pub fn in_process(
        engine: &EngineConfig,
        backend: &Backend,
        gpu: Option<String>,
        executor: &ExecutorConfig,
    ) -> Self {
        let n = |v: usize| Some(v as i64);
        EngineSection {
            model_id: engine.model_name().into(),
            max_input_len: n(engine.max_input_len()),
            max_seq_len: n(engine.max_seq_len()),
            max_batch_size: n(engine.max_batch_size()),
            vocab_size: n(engine.vocab_size()),
            hidden_size: n(engine.hidden_size()),
            num_layers: n(engine.num_layers()),
            num_heads: n(engine.num_heads()),
            tp_size: n(engine.tp_size()),
            pp_size: n(engine.pp_size()),
            cp_size: n(engine.cp_size()),
            backend: Some(backend.kind.clone()),
            backend_version: Some(backend.version.clone()),
            gpu,
            config: serde_json::to_value(engine).ok(),
            executor: serde_json::to_value(executor).ok(),
            ..EngineSection::new("engine config")
        }
    }

    /// What a `trtllm serve` server says of itself (GetModelInfo, GetServerInfo), from `source`.
    pub fn from_server(source: &str, model: &pb::GetModelInfoResponse, server: &pb::GetServerInfoResponse) -> Self {
        let n = |v: i32| Some(i64::from(v));
        EngineSection {
            model_id: model.model_id.clone(),
            max_input_len: n(model.max_input_len),
            max_seq_len: n(model.max_seq_len),
            max_batch_size: n(model.max_batch_size),
            vocab_size: n(model.vocab_size),
            hidden_size: n(model.hidden_size),
            num_layers: n(model.num_layers),
            num_heads: n(model.num_heads),
            tp_size: n(server.tensor_parallel_size),
            pp_size: n(server.pipeline_parallel_size),
            cp_size: n(server.context_parallel_size),
            backend: Some(server.backend.clone()),
            backend_version: Some(server.version.clone()),
            ..EngineSection::new(source)
        }
    }

    /// The one-value settings (not the nested configs), by key in name order, `-` where the
    /// source does not say: what `bench compare` sets side by side.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        let said = |v: &str| if v.is_empty() { "-".to_string() } else { v.to_string() };
        let text = |v: &Option<String>| v.as_deref().map_or_else(|| "-".into(), said);
        let num = |v: Option<i64>| v.map_or_else(|| "-".into(), |n| n.to_string());
        vec![
            ("api", text(&self.api)),
            ("backend", text(&self.backend)),
            ("backend_version", text(&self.backend_version)),
            ("cp_size", num(self.cp_size)),
            ("gpu", text(&self.gpu)),
            ("hidden_size", num(self.hidden_size)),
            ("max_batch_size", num(self.max_batch_size)),
            ("max_input_len", num(self.max_input_len)),
            ("max_seq_len", num(self.max_seq_len)),
            ("model_id", said(&self.model_id)),
            ("num_heads", num(self.num_heads)),
            ("num_layers", num(self.num_layers)),
            ("pp_size", num(self.pp_size)),
            ("source", said(&self.source)),
            ("target", text(&self.target)),
            ("tp_size", num(self.tp_size)),
            ("vocab_size", num(self.vocab_size)),
        ]
    }
}

/// `engine.disaggregation`: the pools, in process or over gRPC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DisaggSetup {
    /// `--prefill-target ... --decode-target ...`.
    Grpc {
        /// `XpYd`.
        shape: String,
        /// `gRPC`.
        #[serde(rename = "where")]
        place: String,
        /// Each worker.
        workers: Vec<DisaggWorkerInfo>,
    },
    /// `--disagg XpYd`.
    InProcess {
        /// `XpYd`.
        shape: String,
        /// `in process`.
        #[serde(rename = "where")]
        place: String,
        /// The executors' cache transceiver.
        cache_transceiver: Option<CacheTransceiverConfig>,
        /// The simulated link the KV transfers run over (`null` when not simulated).
        kv_link: Option<KvLink>,
    },
}

impl DisaggSetup {
    /// The simulated KV link, in process.
    pub fn kv_link(&self) -> Option<KvLink> {
        match self {
            DisaggSetup::InProcess { kv_link, .. } => *kv_link,
            DisaggSetup::Grpc { .. } => None,
        }
    }

    /// The transceiver's buffer, tokens, when it has one.
    pub fn max_tokens_in_buffer(&self) -> Option<u64> {
        match self {
            DisaggSetup::InProcess { cache_transceiver: Some(c), .. } => c.max_tokens_in_buffer,
            _ => None,
        }
    }
}

/// One gRPC worker of `engine.disaggregation.workers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DisaggWorkerInfo {
    /// `prefill` or `decode`.
    pub pool: String,
    /// Its address as given.
    pub addr: String,
    /// The model it serves.
    pub model_id: String,
    /// Its disaggregation mode, as it reports it.
    pub mode: Option<String>,
}

/// `engine.draft_target`: the draft engine and the draft length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraftTargetSetup {
    /// The draft engine's directory.
    pub draft_engine_dir: PathBuf,
    /// The draft model's name.
    pub draft_model_id: String,
    /// Draft tokens in the first round.
    pub draft_len: u32,
    /// Whether the length adapts.
    pub adaptive: bool,
    /// Fewest draft tokens when adaptive.
    pub min_draft_len: u32,
    /// Most draft tokens when adaptive.
    pub max_draft_len: u32,
}
