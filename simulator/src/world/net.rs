//! turmoil transport for the real service and its clients: a listener that
//! axum serves on, and a connector hyper's client dials with. The same
//! router and the same HTTP provider client run here as in production.

use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A turmoil TCP listener that axum can serve on.
pub struct SimListener(pub turmoil::net::TcpListener);

impl std::fmt::Debug for SimListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SimListener")
    }
}

impl SimListener {
    /// Binds `0.0.0.0:port` on the current simulated host.
    pub async fn bind(port: u16) -> io::Result<Self> {
        Ok(Self(turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?))
    }
}

impl axum::serve::Listener for SimListener {
    type Io = turmoil::net::TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok(pair) => return pair,
                // A failed accept is retried after a pause, as axum does for tokio.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// A turmoil TCP stream hyper's client can use.
#[derive(Debug)]
pub struct SimConn(turmoil::net::TcpStream);

impl AsyncRead for SimConn {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for SimConn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl Connection for SimConn {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

type ConnectFuture = Pin<Box<dyn Future<Output = io::Result<TokioIo<SimConn>>> + Send>>;

/// A hyper connector that dials turmoil hosts by the URI's authority (`host:port`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SimConnector;

impl tower::Service<http::Uri> for SimConnector {
    type Response = TokioIo<SimConn>;
    type Error = io::Error;
    type Future = ConnectFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        Box::pin(async move {
            let authority = uri
                .authority()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "uri without authority"))?
                .to_string();
            let stream = turmoil::net::TcpStream::connect(authority).await?;
            Ok(TokioIo::new(SimConn(stream)))
        })
    }
}
