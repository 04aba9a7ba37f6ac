//! What kind of failure an error is ([`ErrorKind`]), with the gRPC and HTTP status a service
//! answers for it. A leaf: every module's error names it to say its own kind, and it names none.

/// What kind of failure an [`Error`](crate::Error) is, for a service to map onto its protocol's status without
/// reading messages: [`ErrorKind::grpc_code`] and [`ErrorKind::http_status`] give the usual codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request is malformed or breaks a limit: the caller must change it.
    InvalidRequest,
    /// The executor is at capacity (full queue, consumer too slow): retry later.
    Overloaded,
    /// The executor is failing, draining or shut down: retry on another server.
    Unavailable,
    /// This one request failed in the executor while others run: retrying elsewhere is unlikely to help.
    RequestFailed,
    /// The setup is wrong (engine directory, config, versions, the engine's LoRA settings, a
    /// tokenizer that does not load, a feature not enabled): the operator must fix it, and the
    /// request may succeed elsewhere. gRPC `FAILED_PRECONDITION`, HTTP 500.
    Configuration,
    /// A local failure (I/O, threads, broken invariants).
    Internal,
}

impl ErrorKind {
    /// The gRPC status code's name (`INVALID_ARGUMENT`, ...) and number a service answers with.
    pub fn grpc_code(self) -> (&'static str, i32) {
        match self {
            ErrorKind::InvalidRequest => ("INVALID_ARGUMENT", 3),
            ErrorKind::Overloaded => ("RESOURCE_EXHAUSTED", 8),
            ErrorKind::Configuration => ("FAILED_PRECONDITION", 9),
            ErrorKind::RequestFailed | ErrorKind::Internal => ("INTERNAL", 13),
            ErrorKind::Unavailable => ("UNAVAILABLE", 14),
        }
    }

    /// The HTTP status an HTTP service answers with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::InvalidRequest => 400,
            ErrorKind::Overloaded => 429,
            ErrorKind::RequestFailed | ErrorKind::Internal | ErrorKind::Configuration => 500,
            ErrorKind::Unavailable => 503,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorKind;

    #[test]
    fn each_kind_maps_to_its_grpc_and_http_status() {
        let cases = [
            (ErrorKind::InvalidRequest, "INVALID_ARGUMENT", 3, 400),
            (ErrorKind::Overloaded, "RESOURCE_EXHAUSTED", 8, 429),
            (ErrorKind::Unavailable, "UNAVAILABLE", 14, 503),
            (ErrorKind::RequestFailed, "INTERNAL", 13, 500),
            (ErrorKind::Configuration, "FAILED_PRECONDITION", 9, 500),
            (ErrorKind::Internal, "INTERNAL", 13, 500),
        ];
        for (kind, name, code, http) in cases {
            assert_eq!(kind.grpc_code(), (name, code), "{kind:?}");
            assert_eq!(kind.http_status(), http, "{kind:?}");
        }
    }
}
