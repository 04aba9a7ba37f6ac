//! TLS for the gRPC port (rustls with the ring provider), optionally requiring client certificates.

use std::path::Path;

use tonic::transport::{Certificate, Identity, ServerTlsConfig};

/// The server's certificate and key, and optionally the CA that client certificates must chain to
/// (mutual TLS). All PEM.
///
/// ```no_run
/// # fn main() -> std::io::Result<()> {
/// use trtllm::server::TlsConfig;
/// let tls = TlsConfig::from_files("server.crt", "server.key", Some("clients-ca.crt"))?;
/// assert!(tls.requires_client_certificates());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    cert_chain: Vec<u8>,
    key: Vec<u8>,
    client_ca: Option<Vec<u8>>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("cert_chain_bytes", &self.cert_chain.len())
            .field("mutual", &self.client_ca.is_some())
            .finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// From PEM bytes: the certificate chain, its private key, and the client CA for mutual TLS.
    pub fn from_pem(cert_chain: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>, client_ca: Option<Vec<u8>>) -> Self {
        TlsConfig { cert_chain: cert_chain.into(), key: key.into(), client_ca }
    }

    /// Reads the PEM files; the error names the file that could not be read.
    pub fn from_files(
        cert_chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
        client_ca: Option<impl AsRef<Path>>,
    ) -> std::io::Result<Self> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
        };
        Ok(TlsConfig {
            cert_chain: read(cert_chain.as_ref())?,
            key: read(key.as_ref())?,
            client_ca: client_ca.map(|p| read(p.as_ref())).transpose()?,
        })
    }

    /// Whether clients must present a certificate signed by the client CA.
    pub fn requires_client_certificates(&self) -> bool {
        self.client_ca.is_some()
    }

    pub(crate) fn server_config(&self) -> ServerTlsConfig {
        let config = ServerTlsConfig::new().identity(Identity::from_pem(&self.cert_chain, &self.key));
        match &self.client_ca {
            Some(ca) => config.client_ca_root(Certificate::from_pem(ca)),
            None => config,
        }
    }
}
