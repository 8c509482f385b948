//! A TCP link a test (or a chaos run) can cut: a proxy on loopback in front
//! of a server (PostgreSQL, say), which forwards every connection until
//! [`Link::cut`], then resets the open ones and refuses new ones (what a
//! process sees when the server stops or the network between them fails),
//! until [`Link::restore`] listens again on the same port. [`Link::redirect`]
//! points it at another server (a promoted standby).
//!
//! Preconditions: a tokio runtime (the link's tasks run on it), and nothing
//! else binding the link's port while it is cut.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// Attempts at listening again after a cut, 100 ms apart.
const RESTORE_ATTEMPTS: usize = 50;

/// A proxy to an upstream server, listening on `addr` while not cut.
pub struct Link {
    addr: SocketAddr,
    upstream: Arc<Mutex<SocketAddr>>,
    /// The accept loop; aborted by a cut.
    accept: Mutex<JoinSet<()>>,
    /// One forwarding task per connection; aborted by a cut or a redirect.
    conns: Arc<Mutex<JoinSet<()>>>,
    /// Cuts not yet restored: two faults may cut one link, and it listens
    /// again only when both have restored it.
    cuts: Mutex<u32>,
}

impl Link {
    /// A link to `upstream` on a free loopback port.
    pub async fn open(upstream: SocketAddr) -> std::io::Result<Link> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let link = Link {
            addr,
            upstream: Arc::new(Mutex::new(upstream)),
            accept: Mutex::new(JoinSet::new()),
            conns: Arc::new(Mutex::new(JoinSet::new())),
            cuts: Mutex::new(0),
        };
        link.serve(listener);
        Ok(link)
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn serve(&self, listener: TcpListener) {
        let (upstream, conns) = (self.upstream.clone(), self.conns.clone());
        self.accept.lock().unwrap().spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let upstream = *upstream.lock().unwrap();
                let mut conns = conns.lock().unwrap();
                while conns.try_join_next().is_some() {} // reap the finished ones: bounded by the open ones
                conns.spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
    }

    /// Cuts the link: open connections are dropped, new ones refused, until
    /// every cut is restored.
    pub fn cut(&self) {
        *self.cuts.lock().unwrap() += 1;
        self.accept.lock().unwrap().abort_all();
        self.conns.lock().unwrap().abort_all();
    }

    /// Points the link at `upstream` (a promoted standby, say): open
    /// connections are dropped (they were the old server's), new ones go to
    /// the new server. The proxy in front of a database that fails over, as
    /// HAProxy or a cloud endpoint would be.
    pub fn redirect(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap() = upstream;
        self.conns.lock().unwrap().abort_all();
    }

    /// Undoes one cut; the last one listens again on the same port (bounded
    /// retries while the old socket lingers).
    pub async fn restore(&self) -> std::io::Result<()> {
        {
            let mut cuts = self.cuts.lock().unwrap();
            *cuts = cuts.saturating_sub(1);
            if *cuts > 0 {
                return Ok(());
            }
        }
        let mut last = None;
        for _ in 0..RESTORE_ATTEMPTS {
            match TcpListener::bind(self.addr).await {
                Ok(listener) => {
                    self.serve(listener);
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Err(last.expect("at least one attempt"))
    }
}
