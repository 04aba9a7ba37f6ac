//! A deadline for a new connection's first bytes: a peer that connects and never sends the HTTP/2
//! preface (or a TLS hello) is disconnected instead of holding a socket and a task forever.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;
use tonic::transport::server::Connected;

/// An accepted connection that fails its reads when no byte arrives within the deadline.
#[derive(Debug)]
pub(crate) struct FirstBytesDeadline<IO> {
    inner: IO,
    /// Until the first bytes arrive; `None` afterwards.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<IO> FirstBytesDeadline<IO> {
    pub(crate) fn new(inner: IO, timeout: Duration) -> Self {
        FirstBytesDeadline { inner, deadline: Some(Box::pin(tokio::time::sleep(timeout))) }
    }
}

/// Wraps every connection of `incoming` with the deadline.
pub(crate) fn with_deadline<S, IO, E>(
    incoming: S,
    timeout: Duration,
) -> impl Stream<Item = Result<FirstBytesDeadline<IO>, E>>
where
    S: Stream<Item = Result<IO, E>>,
{
    incoming.map(move |accepted| accepted.map(|io| FirstBytesDeadline::new(io, timeout)))
}

impl<IO: AsyncRead + Unpin> AsyncRead for FirstBytesDeadline<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Some(deadline) = this.deadline.as_mut() {
            match &read {
                Poll::Ready(Ok(())) if buf.filled().len() > before => this.deadline = None,
                Poll::Pending if deadline.as_mut().poll(cx).is_ready() => {
                    tracing::debug!("a connection sent nothing before the handshake timeout: closing it");
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no bytes from the peer before the handshake timeout",
                    )));
                }
                _ => {}
            }
        }
        read
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for FirstBytesDeadline<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl<IO: Connected> Connected for FirstBytesDeadline<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}
