//! How the command prints an error: its chain of causes, each said once.

use crate::common::cli::{stderr, trtllm};

#[test]
fn an_errors_cause_is_printed_once() {
    for args in
        [&["inspect", "--engine-dir", "/nonexistent/engine"][..], &["bench", "--engine-dir", "/nonexistent/engine"]]
    {
        let out = trtllm(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let text = stderr(&out);
        let cause = std::io::Error::from_raw_os_error(libc::ENOENT).to_string();
        assert_eq!(text.matches(&cause).count(), 1, "{args:?}: {text}");
        assert!(text.starts_with("error: engine directory /nonexistent/engine: "), "{args:?}: {text}");
    }
}
