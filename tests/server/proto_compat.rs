//! Wire compatibility of our protocol files with the gateway's `trtllm.TrtllmService`.
//!
//! The descriptor and byte-level tests run everywhere; the comparison with the upstream
//! Python stubs needs a Python with `smg-grpc-proto` (see `tests/common/python.rs`).

use crate::common;

use std::io::Write as _;

use prost::Message as _;
use prost_types::{DescriptorProto, FileDescriptorSet};
use trtllm::proto::FILE_DESCRIPTOR_SET;
use trtllm::proto::smg::grpc::common::{EngineLoad, KvEventBatch};
use trtllm::proto::trtllm::{
    GenerateComplete, GenerateResponse, GenerateStreamChunk, PerfMetrics, generate_complete, generate_response,
};

fn descriptor_set() -> FileDescriptorSet {
    FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).expect("embedded descriptor set decodes")
}

fn message<'a>(fds: &'a FileDescriptorSet, package: &str, name: &str) -> &'a DescriptorProto {
    fds.file
        .iter()
        .filter(|f| f.package() == package)
        .flat_map(|f| &f.message_type)
        .find(|m| m.name() == name)
        .unwrap_or_else(|| panic!("message {package}.{name} is declared"))
}

fn reserved(fds: &FileDescriptorSet, package: &str, name: &str) -> Vec<i32> {
    message(fds, package, name).reserved_range.iter().flat_map(|r| r.start()..r.end()).collect()
}

#[test]
fn service_declares_the_eight_rpcs_with_their_streaming_flags() {
    let fds = descriptor_set();
    let service = fds
        .file
        .iter()
        .filter(|f| f.package() == "trtllm")
        .flat_map(|f| &f.service)
        .find(|s| s.name() == "TrtllmService")
        .expect("trtllm.TrtllmService is declared");
    let rpcs: Vec<(&str, &str, &str, bool, bool)> = service
        .method
        .iter()
        .map(|m| (m.name(), m.input_type(), m.output_type(), m.client_streaming(), m.server_streaming()))
        .collect();
    let expected = [
        ("Generate", ".trtllm.GenerateRequest", ".trtllm.GenerateResponse", false, true),
        ("Embed", ".trtllm.EmbedRequest", ".trtllm.EmbedResponse", false, false),
        ("HealthCheck", ".trtllm.HealthCheckRequest", ".trtllm.HealthCheckResponse", false, false),
        ("Abort", ".trtllm.AbortRequest", ".trtllm.AbortResponse", false, false),
        ("GetModelInfo", ".trtllm.GetModelInfoRequest", ".trtllm.GetModelInfoResponse", false, false),
        ("GetServerInfo", ".trtllm.GetServerInfoRequest", ".trtllm.GetServerInfoResponse", false, false),
        ("GetTokenizer", ".smg.grpc.common.GetTokenizerRequest", ".smg.grpc.common.GetTokenizerChunk", false, true),
        (
            "SubscribeKvEvents",
            ".smg.grpc.common.SubscribeKvEventsRequest",
            ".smg.grpc.common.KvEventBatch",
            false,
            true,
        ),
    ];
    assert_eq!(rpcs, expected);
}

#[test]
fn retired_field_numbers_stay_reserved() {
    let fds = descriptor_set();
    assert_eq!(reserved(&fds, "trtllm", "GenerateRequest"), [7, 8, 9, 10]);
    assert_eq!(reserved(&fds, "trtllm", "GenerateResponse"), [4]);
    assert_eq!(reserved(&fds, "smg.grpc.common", "KvEventBatch"), [5, 6]);
}

#[test]
fn stream_chunk_encodes_to_the_expected_bytes() {
    let response = GenerateResponse {
        request_id: "r".to_owned(),
        response: Some(generate_response::Response::Chunk(GenerateStreamChunk {
            token_ids: vec![5, 300],
            sequence_index: 1,
            completion_tokens: 2,
            ..Default::default()
        })),
    };
    #[rustfmt::skip]
    let expected = [
        0x0a, 0x01, b'r',             // 1 request_id: length-delimited, "r"
        0x12, 0x09,                   // 2 chunk: length-delimited, 9 bytes
            0x0a, 0x03, 0x05, 0xac, 0x02, // 1 token_ids: packed varints 5, 300
            0x10, 0x01,                   // 2 sequence_index: varint 1
            0x20, 0x02,                   // 4 completion_tokens: varint 2
    ];
    assert_eq!(response.encode_to_vec(), expected);
}

#[test]
fn complete_encodes_to_the_expected_bytes() {
    let response = GenerateResponse {
        request_id: String::new(),
        response: Some(generate_response::Response::Complete(GenerateComplete {
            output_token_ids: vec![7],
            finish_reason: "stop".to_owned(),
            matched_stop: Some(generate_complete::MatchedStop::MatchedTokenId(2)),
            perf_metrics: Some(PerfMetrics { kv_cache_size: 1, ..Default::default() }),
            spec_draft_tokens: 3,
            ..Default::default()
        })),
    };
    #[rustfmt::skip]
    let expected = [
        0x1a, 0x11,                        // 3 complete: length-delimited, 17 bytes
            0x0a, 0x01, 0x07,                  // 1 output_token_ids: packed [7]
            0x1a, 0x04, b's', b't', b'o', b'p', // 3 finish_reason: "stop"
            0x68, 0x02,                        // 13 matched_token_id: 2 (prost writes a
                                               //    oneof where its lowest tag, 4, would go)
            0x52, 0x02, 0x38, 0x01,            // 10 perf_metrics { 7 kv_cache_size: 1 }
            0x78, 0x03,                        // 15 spec_draft_tokens: 3
    ];
    assert_eq!(response.encode_to_vec(), expected);
}

#[test]
fn matched_stop_string_decodes_from_field_four() {
    // 3 complete { 4 matched_stop_str: "\n\n" }
    let bytes = [0x1a, 0x04, 0x22, 0x02, b'\n', b'\n'];
    let response = GenerateResponse::decode(bytes.as_slice()).expect("valid bytes");
    let Some(generate_response::Response::Complete(complete)) = response.response else {
        panic!("field 3 must decode as `complete`, got {:?}", response.response);
    };
    assert_eq!(complete.matched_stop, Some(generate_complete::MatchedStop::MatchedStopStr("\n\n".to_owned())));
}

#[test]
fn heartbeat_batch_encodes_to_the_expected_bytes() {
    let batch = KvEventBatch {
        sequence_number: 3,
        load: Some(EngineLoad { load_only: true, active_token_usage: Some(0.5), ..Default::default() }),
        ..Default::default()
    };
    let mut expected = vec![
        0x08, 0x03, // 1 sequence_number: 3
        0x42, 0x0c, // 8 load: length-delimited, 12 bytes
        0x48, 0x01, // 9 load_only: true
        0x91, 0x01, // 18 active_token_usage: 64-bit (tag needs two varint bytes)
    ];
    expected.extend_from_slice(&0.5f64.to_le_bytes());
    assert_eq!(batch.encode_to_vec(), expected);
}

#[test]
fn descriptors_and_bytes_match_the_upstream_python_stubs() {
    let Some(python) = common::python::python_with_smg_stubs() else {
        return;
    };
    let mut fds_file = tempfile::NamedTempFile::new().expect("temp file");
    fds_file.write_all(FILE_DESCRIPTOR_SET).expect("write descriptor set");
    let script = common::python::python_script("proto_compat.py");
    let output =
        common::python::run_python(&python, &script, &[fds_file.path().as_os_str()]).unwrap_or_else(|e| panic!("{e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "proto_compat.py found differences from the upstream stubs ({}):\n{stdout}\n{stderr}",
        output.status
    );
}
