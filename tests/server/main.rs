//! Integration tests of the gRPC server: the service, its protocol, metrics, security and shutdown.

#[path = "../common/mod.rs"]
mod common;

mod grpc;
mod interop;
mod kv_events;
mod metrics;
mod proto_compat;
mod reliability;
mod security;
mod shutdown;
mod text;
