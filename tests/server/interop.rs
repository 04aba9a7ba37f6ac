//! Our server driven through the upstream Python stubs of `smg-grpc-proto` (installed from PyPI
//! into a cached virtualenv; see tests/common/python.rs).

use crate::common;

use std::ffi::OsStr;

use common::python::{python_script, python_with_smg_stubs, run_python};
use common::server::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_python_stubs_drive_our_server() {
    let Some(python) = python_with_smg_stubs() else {
        return;
    };
    // With KV events, so that the stubs decode stored blocks from SubscribeKvEvents.
    let server =
        TestServer::builder().iteration_ms(1.0).config(|c| c.kv_cache_event_buffer_max_size(1024)).start().await;
    let addr = server.addr.to_string();
    let script = python_script("interop_client.py");
    let output =
        tokio::task::spawn_blocking(move || run_python(&python, &script, &[OsStr::new(&addr)])).await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(output.status.success(), "interop client failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.lines().filter(|l| l.starts_with("ok ")).count() >= 20, "{stdout}");
}
