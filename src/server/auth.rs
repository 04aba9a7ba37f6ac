//! Bearer-token authentication, checked on every gRPC call before it reaches a service.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tonic::Status;

/// The path prefix of `grpc.health.v1.Health` calls (exempt with [`BearerAuth::exempt_health`]).
const HEALTH_PREFIX: &str = "/grpc.health.v1.Health/";

/// The token every call must present as `authorization: Bearer <token>`.
#[derive(Clone)]
pub(crate) struct BearerAuth {
    /// SHA-256 of the expected token: comparing fixed-size digests in constant time reveals
    /// neither the token's bytes nor its length through timing.
    expected: [u8; 32],
    /// Let `grpc.health.v1.Health` through without a token (probes that cannot send headers).
    exempt_health: bool,
}

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerAuth").field("exempt_health", &self.exempt_health).finish_non_exhaustive()
    }
}

impl BearerAuth {
    pub(crate) fn new(token: &str, exempt_health: bool) -> Self {
        BearerAuth { expected: Sha256::digest(token.as_bytes()).into(), exempt_health }
    }

    /// Checks one call: its path and its `authorization` header, if any.
    pub(crate) fn check(&self, path: &str, authorization: Option<&[u8]>) -> Result<(), Status> {
        if self.exempt_health && path.starts_with(HEALTH_PREFIX) {
            return Ok(());
        }
        let Some(value) = authorization else {
            return Err(Status::unauthenticated("missing authorization: Bearer <token>"));
        };
        let token = bearer_token(value).ok_or_else(|| {
            Status::unauthenticated("the authorization header must use the Bearer scheme: Bearer <token>")
        })?;
        let given: [u8; 32] = Sha256::digest(token).into();
        if bool::from(given.ct_eq(&self.expected)) {
            Ok(())
        } else {
            Err(Status::unauthenticated("invalid bearer token"))
        }
    }
}

/// The token of a `Bearer <token>` header value; the scheme is matched case-insensitively
/// (RFC 7235), and any spaces between scheme and token are skipped.
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let space = value.iter().position(|&b| b == b' ')?;
    let (scheme, rest) = value.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Axum middleware in front of every gRPC service: refuses the call with UNAUTHENTICATED unless
/// it carries the token.
pub(crate) async fn require_token(State(auth): State<BearerAuth>, request: Request, next: Next) -> Response {
    let authorization = request.headers().get(axum::http::header::AUTHORIZATION).map(|v| v.as_bytes());
    match auth.check(request.uri().path(), authorization) {
        Ok(()) => next.run(request).await,
        Err(status) => {
            tracing::debug!(path = request.uri().path(), error = status.message(), "call refused");
            status.into_http()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive_and_token_exact() {
        let auth = BearerAuth::new("s3cret", false);
        let path = "/trtllm.TrtllmService/Generate";
        for ok in ["Bearer s3cret", "bearer s3cret", "BEARER  s3cret"] {
            assert!(auth.check(path, Some(ok.as_bytes())).is_ok(), "{ok}");
        }
        for bad in ["Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "Bearers3cret", "s3cret", "Bearer "] {
            let status = auth.check(path, Some(bad.as_bytes())).unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unauthenticated, "{bad}");
        }
        assert_eq!(auth.check(path, None).unwrap_err().code(), tonic::Code::Unauthenticated);
    }

    #[test]
    fn health_is_exempt_only_when_asked() {
        let strict = BearerAuth::new("t", false);
        let open = BearerAuth::new("t", true);
        let health = "/grpc.health.v1.Health/Check";
        assert!(strict.check(health, None).is_err());
        assert!(open.check(health, None).is_ok());
        assert!(open.check("/trtllm.TrtllmService/HealthCheck", None).is_err());
        assert!(open.check("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", None).is_err());
    }
}
