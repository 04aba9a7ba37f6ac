//! The KV handoff: what a context-only request hands to a generation-only one (`ContextPhaseParams`),
//! as a typed value, as plain bytes to send anywhere, and with serde; plus the engine fingerprint
//! that says which engines may pair.

use serde::{Deserialize, Serialize};

use crate::engine::EngineDescription;
use crate::ffi::sys;
use crate::types::disagg::HandoffError;

/// What must match between a context and a generation engine for a KV transfer to be correct:
/// the model (architecture and shape), tensor and pipeline parallelism, the KV-cache dtype and the
/// tokens per block. TensorRT-LLM's transceiver reformats some layouts, but pairs that differ in TP
/// are a known source of wrong output, so anything but an exact match is refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineFingerprint {
    /// Architecture and shape: `LlamaForCausalLM 22L h2048 a32 kv4 v32000`.
    pub model: String,
    /// Tensor-parallel size.
    pub tp_size: u32,
    /// Pipeline-parallel size.
    pub pp_size: u32,
    /// The KV cache's element type (`bfloat16`, `float16`, `fp8`, `int8`).
    pub kv_cache_dtype: String,
    /// Tokens per KV block.
    pub tokens_per_block: u32,
}

impl EngineFingerprint {
    /// The fingerprint of an engine, from its description.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use trtllm::EngineFingerprint;
    /// use trtllm::engine::EngineDescription;
    /// let (a, b) = (tempfile::tempdir()?, tempfile::tempdir()?);
    /// trtllm::sim::SimulatedEngine::builder().build().write_to(a.path())?;
    /// trtllm::sim::SimulatedEngine::builder().max_batch_size(8).build().write_to(b.path())?;
    /// let (a, b) = (EngineDescription::from_dir(a.path())?, EngineDescription::from_dir(b.path())?);
    /// // Runtime limits do not matter: the two engines pair.
    /// assert!(EngineFingerprint::of(&a).check_pairing(&EngineFingerprint::of(&b)).is_ok());
    /// # Ok(()) }
    /// ```
    pub fn of(engine: &EngineDescription) -> Self {
        let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        let (shape, parallelism) = (engine.shape(), engine.parallelism());
        EngineFingerprint {
            model: format!(
                "{} {}L h{} a{} kv{} v{}",
                engine.architecture(),
                shape.num_layers,
                shape.hidden_size,
                shape.num_heads,
                shape.num_kv_heads,
                shape.vocab_size
            ),
            tp_size: clamp(parallelism.tp),
            pp_size: clamp(parallelism.pp),
            kv_cache_dtype: engine.precision().kv_cache_dtype(),
            tokens_per_block: clamp(engine.limits().tokens_per_block),
        }
    }

    /// Checks that a handoff made by an engine with this fingerprint (the context side) can be taken by
    /// one with `generation`'s; the error names the first thing that differs.
    pub fn check_pairing(&self, generation: &EngineFingerprint) -> Result<(), HandoffError> {
        let differs =
            |what, context: String, generation: String| Err(HandoffError::EngineMismatch { what, context, generation });
        if self.model != generation.model {
            return differs("model", self.model.clone(), generation.model.clone());
        }
        if self.tp_size != generation.tp_size {
            return differs("tp_size", self.tp_size.to_string(), generation.tp_size.to_string());
        }
        if self.pp_size != generation.pp_size {
            return differs("pp_size", self.pp_size.to_string(), generation.pp_size.to_string());
        }
        if self.kv_cache_dtype != generation.kv_cache_dtype {
            return differs("kv_cache_dtype", self.kv_cache_dtype.clone(), generation.kv_cache_dtype.clone());
        }
        if self.tokens_per_block != generation.tokens_per_block {
            return differs(
                "tokens_per_block",
                self.tokens_per_block.to_string(),
                generation.tokens_per_block.to_string(),
            );
        }
        Ok(())
    }
}

impl std::fmt::Display for EngineFingerprint {
    /// One line: `<model> tp<T> pp<P> kv <dtype> tpb <tokens per block>`; equal lines pair.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} tp{} pp{} kv {} tpb {}",
            self.model, self.tp_size, self.pp_size, self.kv_cache_dtype, self.tokens_per_block
        )
    }
}

/// What a context-only request hands to a generation-only request on another executor: the first
/// generated token(s), the context request's id, the executor's serialized transfer state
/// (`ContextPhaseParams::getSerializedState`: where the KV blocks are and how to reach them), and
/// this crate's additions, the prompt length and the context engine's [`EngineFingerprint`].
///
/// It is plain data: [`KvHandoff::to_bytes`] / [`KvHandoff::from_bytes`] carry it through any
/// transport (a checksum makes altered bytes a [`HandoffError::Corrupt`]), and it is serde
/// serializable too. A handoff is good once: the generation executor that takes its blocks frees
/// them on the context side.
///
/// ```
/// use trtllm::KvHandoff;
/// let handoff = KvHandoff::from_parts(42, vec![1234], b"opaque transceiver state".to_vec());
/// let bytes = handoff.to_bytes();
/// assert_eq!(KvHandoff::from_bytes(&bytes)?, handoff);
/// let mut altered = bytes.clone();
/// altered[10] ^= 1;
/// assert!(KvHandoff::from_bytes(&altered).is_err());
/// # Ok::<(), trtllm::HandoffError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct KvHandoff {
    /// Boxed: a final output carries an `Option<KvHandoff>`, and every stream event is as large as its
    /// largest kind, so the per-token events stay small.
    parts: Box<HandoffParts>,
}

/// A [`KvHandoff`]'s members (serialized as the handoff itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HandoffParts {
    context_request_id: u64,
    first_tokens: Vec<u32>,
    #[serde(default)]
    draft_tokens: Option<Vec<u32>>,
    state: Vec<u8>,
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    engine: Option<EngineFingerprint>,
}

/// The envelope's magic and version: "TKVH" then 1.
const MAGIC: &[u8; 4] = b"TKVH";
const VERSION: u8 = 1;

impl KvHandoff {
    /// A handoff from its executor-level parts (as trtllm-serve's `disaggregated_params` carry them:
    /// the context request id, the first generated token(s) and the serialized state), without the
    /// prompt length or engine fingerprint this crate adds.
    pub fn from_parts(context_request_id: u64, first_tokens: Vec<u32>, state: Vec<u8>) -> Self {
        KvHandoff {
            parts: Box::new(HandoffParts {
                context_request_id,
                first_tokens,
                draft_tokens: None,
                state,
                prompt_tokens: None,
                engine: None,
            }),
        }
    }

    /// The same handoff with draft tokens the context executor proposed (speculative decoding).
    #[must_use]
    pub fn with_draft_tokens(mut self, draft: Vec<u32>) -> Self {
        self.parts.draft_tokens = Some(draft);
        self
    }

    /// The same handoff, saying which prompt length and engine it came from (checked by the receiver).
    #[must_use]
    pub fn with_origin(mut self, prompt_tokens: u32, engine: EngineFingerprint) -> Self {
        self.parts.prompt_tokens = Some(prompt_tokens);
        self.parts.engine = Some(engine);
        self
    }

    /// The context executor's id of the request that prefilled the prompt.
    pub fn context_request_id(&self) -> u64 {
        self.parts.context_request_id
    }

    /// The first generated token(s) (one per beam).
    pub fn first_tokens(&self) -> &[u32] {
        &self.parts.first_tokens
    }

    /// Draft tokens the context executor proposed, if any.
    pub fn draft_tokens(&self) -> Option<&[u32]> {
        self.parts.draft_tokens.as_deref()
    }

    /// The executor's serialized transfer state (opaque).
    pub fn state(&self) -> &[u8] {
        &self.parts.state
    }

    /// Prompt tokens the handoff's KV cache covers, when known.
    pub fn prompt_tokens(&self) -> Option<u32> {
        self.parts.prompt_tokens
    }

    /// The context engine's fingerprint, when known.
    pub fn engine(&self) -> Option<&EngineFingerprint> {
        self.parts.engine.as_ref()
    }

    /// The handoff as bytes: a versioned little-endian envelope ending in a checksum.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.parts.state.len() + 4 * self.parts.first_tokens.len());
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.parts.context_request_id.to_le_bytes());
        put_tokens(&mut out, &self.parts.first_tokens);
        match &self.parts.draft_tokens {
            Some(draft) => {
                out.push(1);
                put_tokens(&mut out, draft);
            }
            None => out.push(0),
        }
        put_bytes(&mut out, &self.parts.state);
        match self.parts.prompt_tokens {
            Some(n) => {
                out.push(1);
                out.extend_from_slice(&n.to_le_bytes());
            }
            None => out.push(0),
        }
        match &self.parts.engine {
            Some(engine) => {
                out.push(1);
                // A fingerprint always serializes: strings and integers only.
                put_bytes(&mut out, &serde_json::to_vec(engine).unwrap_or_default());
            }
            None => out.push(0),
        }
        let sum = checksum(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Whether `bytes` claim to be made by [`KvHandoff::to_bytes`] (they start with its magic),
    /// rather than being, say, an executor's serialized state; [`KvHandoff::from_bytes`] checks the rest.
    pub fn is_envelope(bytes: &[u8]) -> bool {
        bytes.starts_with(MAGIC)
    }

    /// Reads bytes made by [`KvHandoff::to_bytes`]; anything else (truncated, altered, another
    /// format) is [`HandoffError::Corrupt`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, HandoffError> {
        let corrupt = |why: &str| HandoffError::Corrupt(why.to_string());
        let body_len = bytes.len().checked_sub(8).ok_or_else(|| corrupt("shorter than its checksum"))?;
        let (body, sum) = bytes.split_at(body_len);
        if !body.starts_with(MAGIC) {
            return Err(corrupt("not a KV handoff (bad magic)"));
        }
        if u64::from_le_bytes(sum.try_into().map_err(|_| corrupt("checksum"))?) != checksum(body) {
            return Err(corrupt("checksum mismatch (the bytes were altered or cut)"));
        }
        let mut r = Reader { bytes: &body[MAGIC.len()..] };
        let version = r.u8()?;
        if version != VERSION {
            return Err(HandoffError::Corrupt(format!("envelope version {version} (this build reads {VERSION})")));
        }
        let context_request_id = r.u64()?;
        let first_tokens = r.tokens()?;
        let draft_tokens = if r.flag()? { Some(r.tokens()?) } else { None };
        let state = r.bytes()?.to_vec();
        let prompt_tokens = if r.flag()? { Some(r.u32()?) } else { None };
        let engine = if r.flag()? {
            Some(serde_json::from_slice(r.bytes()?).map_err(|e| HandoffError::Corrupt(format!("engine: {e}")))?)
        } else {
            None
        };
        if !r.bytes.is_empty() {
            return Err(corrupt("trailing bytes"));
        }
        Ok(KvHandoff {
            parts: Box::new(HandoffParts {
                context_request_id,
                first_tokens,
                draft_tokens,
                state,
                prompt_tokens,
                engine,
            }),
        })
    }

    /// The params of a context-only result, as the shim hands them over.
    pub(crate) fn from_ffi(item: &sys::ContextPhaseItem) -> Option<Self> {
        item.set.then(|| KvHandoff {
            parts: Box::new(HandoffParts {
                context_request_id: item.request_id,
                first_tokens: item.first_gen_tokens.iter().map(|&t| t.max(0) as u32).collect(),
                draft_tokens: item
                    .has_draft_tokens
                    .then(|| item.draft_tokens.iter().map(|&t| t.max(0) as u32).collect()),
                state: item.serialized_state.clone(),
                prompt_tokens: None,
                engine: None,
            }),
        })
    }

    /// The params a generation-only request carries.
    pub(crate) fn to_ffi(&self) -> sys::ContextPhaseItem {
        let ids = |t: &[u32]| t.iter().map(|&t| i32::try_from(t).unwrap_or(i32::MAX)).collect();
        sys::ContextPhaseItem {
            set: true,
            request_id: self.parts.context_request_id,
            first_gen_tokens: ids(&self.parts.first_tokens),
            has_draft_tokens: self.parts.draft_tokens.is_some(),
            draft_tokens: self.parts.draft_tokens.as_deref().map(ids).unwrap_or_default(),
            serialized_state: self.parts.state.clone(),
        }
    }
}

fn put_tokens(out: &mut Vec<u8>, tokens: &[u32]) {
    out.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
    for t in tokens {
        out.extend_from_slice(&t.to_le_bytes());
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// 64-bit FNV-1a: catches altered or cut bytes (not tampering, which a transport's own security covers).
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Reads the envelope front to back; every read checks the length left first, so a corrupt length
/// never allocates more than the input holds.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], HandoffError> {
        if self.bytes.len() < n {
            return Err(HandoffError::Corrupt("truncated".into()));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, HandoffError> {
        Ok(self.take(1)?[0])
    }

    fn flag(&mut self) -> Result<bool, HandoffError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(HandoffError::Corrupt(format!("flag byte {other}"))),
        }
    }

    fn u32(&mut self) -> Result<u32, HandoffError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, HandoffError> {
        let (lo, hi) = (self.u32()?, self.u32()?);
        Ok(u64::from(lo) | (u64::from(hi) << 32))
    }

    fn bytes(&mut self) -> Result<&'a [u8], HandoffError> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn tokens(&mut self) -> Result<Vec<u32>, HandoffError> {
        let n = self.u32()? as usize;
        let raw = self.take(n.checked_mul(4).ok_or_else(|| HandoffError::Corrupt("token count".into()))?)?;
        Ok(raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint() -> EngineFingerprint {
        EngineFingerprint {
            model: "LlamaForCausalLM 22L h2048 a32 kv4 v32000".into(),
            tp_size: 1,
            pp_size: 1,
            kv_cache_dtype: "bfloat16".into(),
            tokens_per_block: 32,
        }
    }

    fn full() -> KvHandoff {
        KvHandoff::from_parts(7, vec![11, 12], vec![0, 1, 2, 255])
            .with_draft_tokens(vec![5, 6, 7])
            .with_origin(300, fingerprint())
    }

    #[test]
    fn bytes_and_serde_round_trip_every_field() {
        for handoff in [full(), KvHandoff::from_parts(1, vec![3], Vec::new())] {
            assert_eq!(KvHandoff::from_bytes(&handoff.to_bytes()).unwrap(), handoff);
            let json = serde_json::to_string(&handoff).unwrap();
            assert_eq!(serde_json::from_str::<KvHandoff>(&json).unwrap(), handoff);
        }
        // The members are the JSON object's own (the box inside is not a level of its own).
        let json = serde_json::to_value(full()).unwrap();
        assert_eq!(json["context_request_id"], 7);
        assert_eq!(json["first_tokens"], serde_json::json!([11, 12]));
        assert_eq!(json["prompt_tokens"], 300);
        assert_eq!(json["engine"]["tp_size"], 1);
        let unknown = r#"{"context_request_id": 1, "first_tokens": [], "state": [], "extra": 1}"#;
        assert!(serde_json::from_str::<KvHandoff>(unknown).is_err(), "unknown members are refused");
    }

    /// A final output carries an optional handoff and every stream event is as large as a final: the
    /// handoff is one pointer there, whatever it holds.
    #[test]
    fn an_optional_handoff_is_one_pointer() {
        assert_eq!(std::mem::size_of::<Option<KvHandoff>>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn every_cut_and_every_flipped_byte_is_corrupt() {
        let bytes = full().to_bytes();
        for len in 0..bytes.len() {
            assert!(matches!(KvHandoff::from_bytes(&bytes[..len]), Err(HandoffError::Corrupt(_))), "cut at {len}");
        }
        for i in 0..bytes.len() {
            let mut altered = bytes.clone();
            altered[i] ^= 0x40;
            assert!(matches!(KvHandoff::from_bytes(&altered), Err(HandoffError::Corrupt(_))), "byte {i}");
        }
        assert!(matches!(KvHandoff::from_bytes(b"{\"context_request_id\": 1}"), Err(HandoffError::Corrupt(_))));
    }

    #[test]
    fn pairing_names_the_first_difference() {
        let context = fingerprint();
        assert!(context.check_pairing(&fingerprint()).is_ok());
        let tp2 = EngineFingerprint { tp_size: 2, ..fingerprint() };
        let err = context.check_pairing(&tp2).unwrap_err();
        assert!(matches!(err, HandoffError::EngineMismatch { what: "tp_size", .. }), "{err}");
        let fp8 = EngineFingerprint { kv_cache_dtype: "fp8".into(), ..fingerprint() };
        assert!(matches!(
            context.check_pairing(&fp8),
            Err(HandoffError::EngineMismatch { what: "kv_cache_dtype", .. })
        ));
        let other = EngineFingerprint { model: "Qwen2ForCausalLM 28L h3584 a28 kv4 v152064".into(), ..fingerprint() };
        assert!(matches!(context.check_pairing(&other), Err(HandoffError::EngineMismatch { what: "model", .. })));
    }
}
