//! Authentication and TLS: the bearer token on every call, TLS with certificates made in the
//! test, and mutual TLS.

use crate::common;

use common::server::{TestServer, collect, request};
use futures::StreamExt;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tonic::Code;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;
use trtllm::server::{ServeOptions, TlsConfig};

type Health = tonic_health::pb::health_client::HealthClient<Channel>;

fn with_token<T>(message: T, value: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert("authorization", value.parse().unwrap());
    request
}

async fn health_check(health: &mut Health, token: Option<&str>) -> Result<i32, tonic::Status> {
    let ask = tonic_health::pb::HealthCheckRequest { service: String::new() };
    let request = match token {
        Some(value) => with_token(ask, value),
        None => tonic::Request::new(ask),
    };
    health.check(request).await.map(|r| r.into_inner().status)
}

async fn list_services(channel: Channel, token: Option<&str>) -> Result<Vec<String>, tonic::Status> {
    use tonic_reflection::pb::v1;
    let mut client = v1::server_reflection_client::ServerReflectionClient::new(channel);
    let ask = v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(v1::server_reflection_request::MessageRequest::ListServices(String::new())),
    };
    let asks = futures::stream::iter([ask]);
    let request = match token {
        Some(value) => with_token(asks, value),
        None => tonic::Request::new(asks),
    };
    let mut replies = client.server_reflection_info(request).await?.into_inner();
    match replies.next().await.expect("a reply")?.message_response {
        Some(v1::server_reflection_response::MessageResponse::ListServicesResponse(list)) => {
            Ok(list.service.into_iter().map(|s| s.name).collect())
        }
        other => panic!("unexpected reply {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_token_is_checked_on_every_call() {
    let options = ServeOptions { auth_token: Some("s3cret".into()), ..Default::default() };
    let server = TestServer::start(1.0, options).await;
    let mut client = server.client().await;
    let mut health = Health::new(server.channel().await);

    for token in [None, Some("Bearer nope"), Some("Basic s3cret"), Some("s3cret"), Some("Bearer s3cret2")] {
        let ask = pb::HealthCheckRequest {};
        let refused = match token {
            Some(value) => client.health_check(with_token(ask, value)).await,
            None => client.health_check(ask).await,
        };
        assert_eq!(refused.unwrap_err().code(), Code::Unauthenticated, "HealthCheck with {token:?}");
        let refused = match token {
            Some(value) => client.generate(with_token(request("g", vec![1], 2, true), value)).await,
            None => client.generate(request("g", vec![1], 2, true)).await,
        };
        assert_eq!(refused.map(|_| ()).unwrap_err().code(), Code::Unauthenticated, "Generate with {token:?}");
        let refused = health_check(&mut health, token).await.unwrap_err();
        assert_eq!(refused.code(), Code::Unauthenticated, "grpc.health.v1 with {token:?}");
        let refused = list_services(server.channel().await, token).await.unwrap_err();
        assert_eq!(refused.code(), Code::Unauthenticated, "reflection with {token:?}");
    }
    assert_eq!(server.executor.executor().in_flight(), 0, "nothing reached the executor");

    // The scheme is case-insensitive; the token is exact.
    for value in ["Bearer s3cret", "bearer s3cret", "BEARER s3cret"] {
        let ok = client.health_check(with_token(pb::HealthCheckRequest {}, value)).await.unwrap();
        assert_eq!(ok.into_inner().status, "OK");
        let mut stream = client.generate(with_token(request("g", vec![1], 2, true), value)).await.unwrap().into_inner();
        while let Some(item) = stream.next().await {
            item.unwrap();
        }
        assert_eq!(health_check(&mut health, Some(value)).await.unwrap(), 1, "SERVING");
        let names = list_services(server.channel().await, Some(value)).await.unwrap();
        assert!(names.iter().any(|n| n == "trtllm.TrtllmService"), "{names:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_may_be_left_open_for_probes_and_nothing_else() {
    let options = ServeOptions { auth_token: Some("t0k".into()), health_without_auth: true, ..Default::default() };
    let server = TestServer::start(1.0, options).await;
    let mut health = Health::new(server.channel().await);
    assert_eq!(health_check(&mut health, None).await.unwrap(), 1, "grpc.health.v1 answers without a token");
    let mut watch = health
        .watch(tonic_health::pb::HealthCheckRequest { service: "trtllm.TrtllmService".into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(watch.next().await.unwrap().unwrap().status, 1);
    let mut client = server.client().await;
    assert_eq!(client.health_check(pb::HealthCheckRequest {}).await.unwrap_err().code(), Code::Unauthenticated);
    assert_eq!(list_services(server.channel().await, None).await.unwrap_err().code(), Code::Unauthenticated);
}

/// A CA, and leaf certificates it signs.
struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl Pki {
    fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        Pki { ca: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap() }
    }

    /// (certificate PEM, key PEM) for `name`.
    fn leaf(&self, name: &str) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec![name.to_string()]).unwrap().signed_by(&key, &self.ca).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn ca_pem(&self) -> String {
        self.ca.pem()
    }
}

async fn tls_channel(server: &TestServer, tls: ClientTlsConfig) -> Result<Channel, tonic::transport::Error> {
    Channel::from_shared(format!("https://{}", server.addr)).unwrap().tls_config(tls).unwrap().connect().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_clients_that_trust_the_certificate() {
    let pki = Pki::new();
    let (cert, key) = pki.leaf("localhost");
    let options = ServeOptions { tls: Some(TlsConfig::from_pem(cert, key, None)), ..Default::default() };
    let server = TestServer::start(1.0, options).await;

    let trusted = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pki.ca_pem())).domain_name("localhost");
    let mut client = TrtllmServiceClient::new(tls_channel(&server, trusted).await.unwrap());
    let health = client.health_check(pb::HealthCheckRequest {}).await.unwrap().into_inner();
    assert_eq!(health.status, "OK");
    let messages = collect(&mut client, request("tls", vec![1, 2], 5, true)).await.unwrap();
    assert_eq!(messages.len(), 6, "five chunks and a complete over TLS");

    // A client that does not trust the certificate, and one that speaks plaintext, get nowhere.
    let stranger = Pki::new();
    let untrusted =
        ClientTlsConfig::new().ca_certificate(Certificate::from_pem(stranger.ca_pem())).domain_name("localhost");
    let refused = match tls_channel(&server, untrusted).await {
        Err(_) => true,
        Ok(channel) => TrtllmServiceClient::new(channel).health_check(pb::HealthCheckRequest {}).await.is_err(),
    };
    assert!(refused, "an untrusted certificate was accepted");
    let plain = Channel::from_shared(format!("http://{}", server.addr)).unwrap().connect().await;
    if let Ok(channel) = plain {
        let reply = TrtllmServiceClient::new(channel).health_check(pb::HealthCheckRequest {}).await;
        assert!(reply.is_err(), "plaintext was answered on a TLS port");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_requires_a_client_certificate_from_the_ca() {
    let pki = Pki::new();
    let (cert, key) = pki.leaf("localhost");
    let tls = TlsConfig::from_pem(cert, key, Some(pki.ca_pem().into_bytes()));
    assert!(tls.requires_client_certificates());
    let server = TestServer::start(1.0, ServeOptions { tls: Some(tls), ..Default::default() }).await;
    let base = || ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pki.ca_pem())).domain_name("localhost");

    let (client_cert, client_key) = pki.leaf("client");
    let with_cert = base().identity(Identity::from_pem(client_cert, client_key));
    let mut client = TrtllmServiceClient::new(tls_channel(&server, with_cert).await.unwrap());
    assert_eq!(client.health_check(pb::HealthCheckRequest {}).await.unwrap().into_inner().status, "OK");

    let refused = match tls_channel(&server, base()).await {
        Err(_) => true,
        Ok(channel) => TrtllmServiceClient::new(channel).health_check(pb::HealthCheckRequest {}).await.is_err(),
    };
    assert!(refused, "a client without a certificate was served");

    let other = Pki::new();
    let (other_cert, other_key) = other.leaf("client");
    let foreign = base().identity(Identity::from_pem(other_cert, other_key));
    let refused = match tls_channel(&server, foreign).await {
        Err(_) => true,
        Ok(channel) => TrtllmServiceClient::new(channel).health_check(pb::HealthCheckRequest {}).await.is_err(),
    };
    assert!(refused, "a certificate from another CA was accepted");
}
