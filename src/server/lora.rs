//! The gRPC `lora_config` field: decoded with the documented byte layout (see
//! [`crate::lora::decode_wire`]) and checked against the engine before the request is enqueued.

use tonic::Status;

use crate::EngineConfig;
use crate::lora::{LoraConfig, WireLoraConfig, decode_wire};
use crate::proto::trtllm as pb;

/// The request's adapter: `None` without `lora_config` (or with task id 0 and nothing else);
/// INVALID_ARGUMENT naming the fault for a malformed adapter, one that does not fit the engine,
/// or any adapter on an engine built without LoRA.
pub fn lora_config(request: &pb::GenerateRequest, engine: &EngineConfig) -> Result<Option<LoraConfig>, Status> {
    let Some(lora) = &request.lora_config else { return Ok(None) };
    let wire =
        WireLoraConfig { task_id: lora.task_id, weights: lora.weights.clone(), config_json: lora.config_json.clone() };
    decode_wire(wire, engine.lora()).map_err(|e| Status::invalid_argument(format!("lora_config: {e}")))
}
