//! Integration tests of the gRPC server: the service, its protocol, metrics, security and shutdown.
//! Built into the `integration` test binary (tests/integration/main.rs), which provides `crate::common`.

mod disagg;
mod gateway;
mod gateway_guided;
mod grpc;
mod guided;
mod interop;
mod kv_events;
mod lora;
mod metrics;
mod proto_compat;
mod reliability;
mod security;
mod shutdown;
mod speculative;
mod text;
