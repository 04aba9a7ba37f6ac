//! Generated gRPC types for the `trtllm.TrtllmService` protocol spoken with the Shepherd Model Gateway.
//!
//! The module tree mirrors the protobuf packages, so the generated cross-package paths resolve:
//! [`trtllm`] holds the service (client and server) and its messages, [`smg::grpc::common`]
//! the tokenizer, KV-event and load-report messages shared by all gateway engines.
//!
//! The comments in `proto/` become the rustdoc of the generated items, so the crate's
//! `missing_docs` lint also checks that every message, field and RPC there is documented.
//!
//! ```rust
//! use prost::Message;
//! use trtllm::proto::trtllm::{GenerateResponse, GenerateStreamChunk, generate_response};
//!
//! let response = GenerateResponse {
//!     request_id: "r1".to_owned(),
//!     response: Some(generate_response::Response::Chunk(GenerateStreamChunk {
//!         token_ids: vec![42],
//!         ..Default::default()
//!     })),
//! };
//! let bytes = response.encode_to_vec();
//! assert_eq!(GenerateResponse::decode(bytes.as_slice())?, response);
//! # Ok::<(), prost::DecodeError>(())
//! ```

/// Messages and the `TrtllmService` client/server of protobuf package `trtllm`.
// `GenerateResponse`'s `complete` outweighs its `chunk` (its handoff bytes among its fields); one
// reply message is built and sent at a time, so the generated enum stays unboxed.
#[allow(clippy::large_enum_variant)]
pub mod trtllm {
    tonic::include_proto!("trtllm");
}

/// Protobuf package `smg`.
pub mod smg {
    /// Protobuf package `smg.grpc`.
    pub mod grpc {
        /// Messages of protobuf package `smg.grpc.common`: tokenizer download, KV-cache
        /// events and engine load reports.
        pub mod common {
            tonic::include_proto!("smg.grpc.common");
        }
    }
}

/// Encoded `FileDescriptorSet` of all protocol files, for gRPC server reflection.
///
/// ```rust
/// assert!(!trtllm::proto::FILE_DESCRIPTOR_SET.is_empty());
/// ```
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/trtllm_descriptor.bin"));
