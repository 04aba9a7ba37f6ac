//! Structured output through the real Shepherd Model Gateway (`smg` from the test venv) in front of
//! `trtllm serve`: an OpenAI `response_format` json_schema and a `tool_choice: "required"` tool
//! call, each checked by an independent JSON Schema validator. The gateway turns both into the
//! protocol's `guided_decoding` field with guide type JSON_SCHEMA (for tools: an array of
//! `{"name", "parameters"}` objects, one `anyOf` branch per tool), which the server hands to the
//! simulated executor's grammar engine. Skipped (with the reason) only when the venv cannot be built
//! and `TRTLLM_SKIP_PY_TESTS=1`.

use std::path::PathBuf;
use std::process::Child;

use serde_json::{Value, json};

use crate::common::gateway::{Gateway, smg_executable};
use crate::common::server::spawn_serve;

/// Choices per request (OpenAI `n`). The gateway sends no seed for chat, so the simulator's
/// sequences differ by their index: each choice takes its own path through the grammar.
const CHOICES: usize = 8;
/// Enough for the simulator's grammar-steered outputs to close their JSON.
const MAX_TOKENS: u32 = 400;

/// The schema a chat answer must follow.
fn record_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 16},
            "age": {"type": "integer", "minimum": 0, "maximum": 130},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
            "active": {"type": "boolean"}
        },
        "required": ["name", "age", "active"],
        "additionalProperties": false
    })
}

/// Two tools with strict parameter schemas.
fn tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "maxLength": 12},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7}
                },
                "required": ["city", "days"],
                "additionalProperties": false
            }
        }},
        {"type": "function", "function": {
            "name": "set_alarm",
            "description": "Sets an alarm",
            "parameters": {
                "type": "object",
                "properties": {
                    "hour": {"type": "integer", "minimum": 0, "maximum": 23},
                    "label": {"type": "string", "enum": ["wake", "meeting", "tea"]}
                },
                "required": ["hour"],
                "additionalProperties": false
            }
        }}
    ])
}

/// `trtllm serve` (the real binary, built-in engine, guided decoding on by default); killed on drop.
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One `trtllm serve` behind a fresh gateway that reads the built-in engine's tokenizer files.
async fn gateway_with_worker(smg: &(PathBuf, PathBuf)) -> (Gateway, Worker) {
    let (child, addr) = spawn_serve(&[]);
    let worker = Worker(child);
    let addr: std::net::SocketAddr = addr.parse().expect("worker address");
    let tokenizer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/sim-tokenizer");
    (Gateway::start(smg, &[addr], "round_robin", &tokenizer).await, worker)
}

/// POSTs a chat completion; the reply's JSON, or the HTTP status and body.
async fn chat(gateway: &Gateway, body: &Value) -> Result<Value, String> {
    gateway.post("/v1/chat/completions", body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_format_json_schema_through_the_gateway_validates() {
    let Some(smg) = smg_executable() else { return };
    let (gateway, _worker) = gateway_with_worker(&smg).await;
    let schema = record_schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let body = json!({
        "model": "trtllm-builtin-sim",
        "messages": [{"role": "user", "content": "Describe a person as JSON."}],
        "max_tokens": MAX_TOKENS,
        "n": CHOICES,
        "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": true}},
    });
    let reply = chat(&gateway, &body).await.unwrap_or_else(|e| panic!("{e}\n{}", gateway.log_text()));
    let choices = reply["choices"].as_array().unwrap_or_else(|| panic!("no choices: {reply}"));
    assert_eq!(choices.len(), CHOICES, "{reply}");
    let mut complete = 0;
    for (seed, choice) in choices.iter().enumerate() {
        let content = choice["message"]["content"].as_str().unwrap_or_else(|| panic!("no content: {reply}"));
        match choice["finish_reason"].as_str() {
            Some("stop") => {
                let value: Value = serde_json::from_str(content)
                    .unwrap_or_else(|e| panic!("choice {seed}: content {content:?} is not JSON: {e}"));
                if let Err(why) = validator.validate(&value) {
                    panic!("choice {seed}: {value} does not follow the schema: {why}");
                }
                complete += 1;
            }
            Some("length") => {}
            other => panic!("choice {seed}: finish_reason {other:?} in {reply}"),
        }
    }
    // The simulator's token choice closes most outputs well within MAX_TOKENS.
    assert!(complete * 10 >= CHOICES * 7, "only {complete} of {CHOICES} answers completed: {reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_tool_calls_through_the_gateway_validate_against_the_tool_parameters() {
    let Some(smg) = smg_executable() else { return };
    let (gateway, _worker) = gateway_with_worker(&smg).await;
    let tools = tools();
    let validators: Vec<(String, jsonschema::Validator)> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let function = &t["function"];
            (
                function["name"].as_str().unwrap().to_string(),
                jsonschema::validator_for(&function["parameters"]).unwrap(),
            )
        })
        .collect();
    let body = json!({
        "model": "trtllm-builtin-sim",
        "messages": [{"role": "user", "content": "Plan my day."}],
        "max_tokens": MAX_TOKENS,
        "n": CHOICES,
        "tools": tools,
        "tool_choice": "required",
    });
    let reply = chat(&gateway, &body).await.unwrap_or_else(|e| panic!("{e}\n{}", gateway.log_text()));
    let choices = reply["choices"].as_array().unwrap_or_else(|| panic!("no choices: {reply}"));
    assert_eq!(choices.len(), CHOICES, "{reply}");
    let mut complete = 0;
    for (seed, choice) in choices.iter().enumerate() {
        if choice["finish_reason"] == "length" {
            continue;
        }
        let calls = choice["message"]["tool_calls"]
            .as_array()
            .filter(|calls| !calls.is_empty())
            .unwrap_or_else(|| panic!("choice {seed}: no tool call in {reply}"));
        for call in calls {
            let name = call["function"]["name"].as_str().unwrap_or_else(|| panic!("unnamed call {call}"));
            let (_, validator) = validators
                .iter()
                .find(|(tool, _)| tool == name)
                .unwrap_or_else(|| panic!("choice {seed}: call to unknown tool {name}"));
            let arguments = call["function"]["arguments"].as_str().unwrap_or_else(|| panic!("no arguments: {call}"));
            let value: Value = serde_json::from_str(arguments)
                .unwrap_or_else(|e| panic!("choice {seed}: arguments {arguments:?} are not JSON: {e}"));
            if let Err(why) = validator.validate(&value) {
                panic!("choice {seed}: {name} arguments {value} do not follow the tool's parameters: {why}");
            }
        }
        complete += 1;
    }
    assert!(complete * 10 >= CHOICES * 7, "only {complete} of {CHOICES} answers completed: {reply}");
}
