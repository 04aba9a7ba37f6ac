//! The integration tests as one binary: one compile and one link of the helpers and of the
//! library's generic code instead of one per directory. Each directory's main.rs lists its
//! modules; a test's name starts with its directory (`cargo test --test integration sim::`).

#[path = "../common/mod.rs"]
mod common;

#[path = "../bench/main.rs"]
mod bench;
#[path = "../cli/main.rs"]
mod cli;
#[path = "../executor/main.rs"]
mod executor;
#[path = "../server/main.rs"]
mod server;
#[path = "../sim/main.rs"]
mod sim;
#[path = "../text/main.rs"]
mod text;
