//! The gRPC server on the target engine, driven through the upstream Python stubs
//! (`smg-grpc-proto` from PyPI, in the venv tests/common/python.rs prepares; `TRTLLM_PY` names a
//! ready interpreter, `TRTLLM_SKIP_PY_TESTS=1` skips). The protocol is smg's
//! `trtllm.TrtllmService` (smg-project/smg, grpc_servicer/.../trtllm_service.proto).

use std::ffi::OsString;
use std::path::Path;

use trtllm::server::{ServeOptions, serve};

use crate::common::python::{python_with_smg_stubs, run_python};
use crate::harness::{skip, target};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_python_stubs_drive_the_server_on_this_engine() {
    let Some(python) = python_with_smg_stubs() else {
        return skip("grpc", "no Python with the smg-grpc-proto stubs (TRTLLM_SKIP_PY_TESTS=1)");
    };
    let t = target();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = ServeOptions { addr, ..ServeOptions::default() };
    // The shared executor: the server is never told to stop (that would shut the executor down for
    // every other test); it ends with this test's runtime.
    let server =
        tokio::spawn(serve(t.executor.clone(), Some(t.tokenizer.clone()), options, listener, std::future::pending()));
    let prompt = t.unique_prompt(800, 6).iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let args: Vec<OsString> = vec![
        addr.to_string().into(),
        t.engine.max_input_len().to_string().into(),
        t.engine.vocab_size().to_string().into(),
        prompt.into(),
    ];
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/grpc_client.py");
    let output = tokio::task::spawn_blocking(move || {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
        run_python(&python, &script, &args)
    })
    .await
    .unwrap()
    .unwrap();
    server.abort();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "grpc_client.py failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.lines().filter(|l| l.starts_with("ok ")).count() >= 12, "{stdout}");
}
