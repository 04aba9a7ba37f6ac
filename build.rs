//! Build script: compiles the gRPC protocol files (the C++ shim is added elsewhere).
#[path = "build/proto.rs"]
mod proto;
fn main() { if let Err(e) = proto::compile_protos() { panic!("compiling proto/: {e}"); } }
