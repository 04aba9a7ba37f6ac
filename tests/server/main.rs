//! Integration tests of the gRPC server: the service, its protocol, metrics, security and shutdown.

#[path = "../common/mod.rs"]
mod common;

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
