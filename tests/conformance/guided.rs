//! Guided decoding: JSON-schema output that validates with an independent validator.
//!
//! Upstream: `GuidedDecodingParams(kJSON_SCHEMA, schema)` with a `GuidedDecodingConfig` built from
//! the tokenizer's vocabulary and stop ids (cpp/include/tensorrt_llm/executor/executor.h, v1.1.0/
//! v1.2.0; backend XGrammar). A guided sequence ends on the end id once the grammar accepts.

use serde_json::Value;
use trtllm::guided::GuidedDecodingParams;
use trtllm::{FinishReason, SamplingParams};

use crate::common::sim::drain;
use crate::harness::{executor, skip, target};

const SCHEMA: &str = r#"{
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 10},
        "age": {"type": "integer", "minimum": 0, "maximum": 150}
    },
    "required": ["name", "age"],
    "additionalProperties": false
}"#;

#[test]
fn json_schema_output_validates() {
    let t = target();
    let Some(&eos) = t.tokenizer.eos_token_ids().first() else {
        return skip("json_schema_output_validates", "the tokenizer names no eos token to end guided output");
    };
    let validator = jsonschema::validator_for(&serde_json::from_str::<Value>(SCHEMA).unwrap()).unwrap();
    let prompt = t.tokenizer.encode("Describe a person as JSON:", true).unwrap();
    let mut complete = 0;
    for seed in 0..8 {
        let sampling = SamplingParams::default().temperature(1.0).seed(seed);
        let request = t
            .request(prompt.clone(), 160)
            .with_end_id(eos)
            .with_sampling(sampling)
            .with_streaming(seed % 2 == 0)
            .with_guided_decoding(GuidedDecodingParams::json_schema(SCHEMA));
        let out = drain(executor().enqueue(request).unwrap());
        assert_eq!(out.after_terminal, 0);
        let done = out.done();
        let text = t.tokenizer.decode(done.token_ids(), true).unwrap();
        match done.finish_reason {
            FinishReason::EndId => {
                complete += 1;
                let value: Value =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("seed {seed}: {text:?} is not JSON: {e}"));
                if let Err(e) = validator.validate(&value) {
                    panic!("seed {seed}: {text:?} does not match the schema: {e}");
                }
            }
            FinishReason::Length => {}
            other => panic!("seed {seed}: unexpected finish {other:?} for {text:?}"),
        }
    }
    assert!(complete >= 1, "no guided output of 8 reached the end id within 160 tokens");
}
