//! Build step that compiles the gRPC protocol files in `proto/` into Rust code.
//!
//! Parsing is done by `protox` (pure Rust), so building the crate needs no system `protoc`.
//! Besides the generated messages, client and server, the encoded `FileDescriptorSet` is
//! written to `$OUT_DIR/trtllm_descriptor.bin` so the server can offer gRPC reflection.

use std::env;
use std::error::Error;
use std::fs;
use std::path::PathBuf;

use protox::prost::Message as _;

/// Include root for the protocol files, relative to the crate root. Imports inside the files
/// are resolved against it, which is why the package directories mirror the package names.
const PROTO_ROOT: &str = "proto";

/// The protocol files, relative to [`PROTO_ROOT`]. The service file imports the common one;
/// both are listed so a change to either triggers a rebuild.
const PROTO_FILES: &[&str] = &["trtllm/trtllm_service.proto", "smg/grpc/common.proto"];

/// File name (inside `OUT_DIR`) of the encoded descriptor set that `src/proto.rs` embeds.
const DESCRIPTOR_FILE: &str = "trtllm_descriptor.bin";

/// Compiles `proto/` into Rust sources and an encoded descriptor set in `OUT_DIR`.
pub fn compile_protos() -> Result<(), Box<dyn Error>> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    let root = manifest_dir.join(PROTO_ROOT);

    for file in PROTO_FILES {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
    }

    // Source info is kept: prost turns the .proto comments into rustdoc from it, and
    // reflection clients can show the same comments.
    let fds = protox::compile(PROTO_FILES, [&root])?;
    fs::write(out_dir.join(DESCRIPTOR_FILE), fds.encode_to_vec())?;

    tonic_prost_build::configure().build_server(true).build_client(true).compile_fds(fds)?;
    Ok(())
}
