//! A TCP link a test (or a chaos run) can cut: a proxy on loopback in front
//! of a server (PostgreSQL, say), which forwards every connection until
//! [`Link::cut`], then resets the open ones and refuses new ones (what a
//! process sees when the server stops or the network between them fails),
//! until [`Link::restore`] listens again on the same port. [`Link::redirect`]
//! points it at another server (a promoted standby). [`Link::lose_answers`]
//! is a one-way partition: requests still reach the server, which acts on
//! them, but nothing it says comes back (the client times out not knowing
//! what happened) until [`Link::answer_again`]. [`Link::delay_answers`]
//! slows it: every chunk the server sends waits that long first.
//!
//! Preconditions: a tokio runtime (the link's tasks run on it), and nothing
//! else binding the link's port while it is cut.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// Attempts at listening again after a cut, 100 ms apart.
const RESTORE_ATTEMPTS: usize = 50;
/// Bytes read from the server at a time.
const CHUNK_BYTES: usize = 16 * 1024;

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
    /// Whether the server's bytes are dropped instead of forwarded.
    mute: Arc<AtomicBool>,
    /// How long each chunk of the server's bytes waits before it is forwarded, ms.
    delay_ms: Arc<AtomicU64>,
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
            mute: Arc::new(AtomicBool::new(false)),
            delay_ms: Arc::new(AtomicU64::new(0)),
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
        let (mute, delay_ms) = (self.mute.clone(), self.delay_ms.clone());
        self.accept.lock().unwrap().spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = *upstream.lock().unwrap();
                let mut conns = conns.lock().unwrap();
                while conns.try_join_next().is_some() {} // reap the finished ones: bounded by the open ones
                let (mute, delay_ms) = (mute.clone(), delay_ms.clone());
                conns.spawn(async move {
                    if let Ok(server) = TcpStream::connect(upstream).await {
                        forward(client, server, &mute, &delay_ms).await;
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

    /// A one-way partition: from now on the server's bytes, on open
    /// connections and new ones, are dropped; the client's still reach it.
    pub fn lose_answers(&self) {
        self.mute.store(true, Ordering::SeqCst);
    }

    /// Ends [`Link::lose_answers`]: the server's bytes are forwarded again
    /// (what was dropped stays lost).
    pub fn answer_again(&self) {
        self.mute.store(false, Ordering::SeqCst);
    }

    /// Slows the server's answers, on open connections and new ones: each
    /// chunk it sends waits `ms` before it is forwarded (0: none).
    pub fn delay_answers(&self, ms: u64) {
        self.delay_ms.store(ms, Ordering::SeqCst);
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

/// Copies `client`'s bytes to `server` and the server's back, dropping the
/// server's while `mute` is set and holding each chunk of them `delay_ms`
/// first, until either side closes.
async fn forward(client: TcpStream, server: TcpStream, mute: &AtomicBool, delay_ms: &AtomicU64) {
    let (mut client_rx, mut client_tx) = client.into_split();
    let (mut server_rx, mut server_tx) = server.into_split();
    let requests = async {
        let _ = tokio::io::copy(&mut client_rx, &mut server_tx).await;
        let _ = server_tx.shutdown().await;
    };
    let answers = async {
        let mut buf = vec![0u8; CHUNK_BYTES];
        loop {
            let n = match server_rx.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let delay = delay_ms.load(Ordering::SeqCst);
            if delay > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
            }
            if !mute.load(Ordering::SeqCst) && client_tx.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = client_tx.shutdown().await;
    };
    tokio::join!(requests, answers);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// A server that counts the bytes it is sent and echoes them.
    async fn echo() -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (addr, seen) = (listener.local_addr().unwrap(), Arc::new(AtomicUsize::new(0)));
        let counter = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    while let Ok(n @ 1..) = s.read(&mut buf).await {
                        counter.fetch_add(n, Ordering::SeqCst);
                        if s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        (addr, seen)
    }

    /// Sends `msg` and waits at most 300 ms for its echo.
    async fn ask(conn: &mut TcpStream, msg: &[u8]) -> Option<Vec<u8>> {
        conn.write_all(msg).await.unwrap();
        let mut buf = vec![0u8; msg.len()];
        tokio::time::timeout(Duration::from_millis(300), conn.read_exact(&mut buf)).await.ok()?.ok()?;
        Some(buf)
    }

    #[tokio::test]
    async fn a_link_that_loses_answers_still_delivers_requests() {
        let (server, seen) = echo().await;
        let link = Link::open(server).await.unwrap();
        let mut conn = TcpStream::connect(link.addr()).await.unwrap();
        assert_eq!(ask(&mut conn, b"one").await.as_deref(), Some(&b"one"[..]));
        link.lose_answers();
        assert_eq!(ask(&mut conn, b"two").await, None, "the answer is lost");
        let mut fresh = TcpStream::connect(link.addr()).await.unwrap();
        assert_eq!(ask(&mut fresh, b"new").await, None, "on new connections too");
        assert_eq!(seen.load(Ordering::SeqCst), 9, "every request reached the server");
        link.answer_again();
        assert_eq!(ask(&mut fresh, b"back").await.as_deref(), Some(&b"back"[..]));
    }

    #[tokio::test]
    async fn a_delayed_link_answers_late() {
        let (server, _) = echo().await;
        let link = Link::open(server).await.unwrap();
        let mut conn = TcpStream::connect(link.addr()).await.unwrap();
        link.delay_answers(500);
        let sent = tokio::time::Instant::now();
        assert_eq!(ask(&mut conn, b"slow").await, None, "not within 300 ms");
        let mut buf = [0u8; 4];
        conn.read_exact(&mut buf).await.unwrap();
        assert!(sent.elapsed() >= Duration::from_millis(500) && &buf == b"slow");
        link.delay_answers(0);
        assert_eq!(ask(&mut conn, b"fast").await.as_deref(), Some(&b"fast"[..]));
    }

    #[tokio::test]
    async fn a_cut_link_refuses_until_restored() {
        let (server, _) = echo().await;
        let link = Link::open(server).await.unwrap();
        let mut conn = TcpStream::connect(link.addr()).await.unwrap();
        assert!(ask(&mut conn, b"hi").await.is_some());
        link.cut();
        tokio::task::yield_now().await;
        assert_eq!(ask(&mut conn, b"hi").await, None, "the open connection is reset");
        assert!(TcpStream::connect(link.addr()).await.is_err(), "new ones are refused");
        link.restore().await.unwrap();
        let mut again = TcpStream::connect(link.addr()).await.unwrap();
        assert!(ask(&mut again, b"hi").await.is_some());
    }
}
