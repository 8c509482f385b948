//! Whether a Docker engine answers on this machine.

use std::time::Duration;

/// How long the probe waits for the engine's socket, ms.
const CONNECT_TIMEOUT_MS: u64 = 500;

/// True when a Docker engine accepts a connection: `DOCKER_HOST`
/// (`unix://PATH` or `tcp://HOST:PORT`) when set, else
/// `/var/run/docker.sock`. A `docker` client without an engine (as on the
/// project's CI machine) is not enough.
pub fn docker_reachable() -> bool {
    match std::env::var("DOCKER_HOST") {
        Ok(host) if !host.trim().is_empty() => reachable(host.trim()),
        _ => unix_socket_answers("/var/run/docker.sock"),
    }
}

fn reachable(host: &str) -> bool {
    if let Some(path) = host.strip_prefix("unix://") {
        return unix_socket_answers(path);
    }
    if let Some(addr) = host.strip_prefix("tcp://") {
        use std::net::ToSocketAddrs;
        let Ok(mut addrs) = addr.to_socket_addrs() else { return false };
        return addrs
            .any(|a| std::net::TcpStream::connect_timeout(&a, Duration::from_millis(CONNECT_TIMEOUT_MS)).is_ok());
    }
    false
}

#[cfg(unix)]
fn unix_socket_answers(path: &str) -> bool {
    std::os::unix::net::UnixStream::connect(path).is_ok()
}

#[cfg(not(unix))]
fn unix_socket_answers(_path: &str) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_socket_or_closed_port_is_not_an_engine() {
        assert!(!reachable("unix:///nonexistent/holdfast/docker.sock"));
        // Port 1 on loopback: nothing listens there.
        assert!(!reachable("tcp://127.0.0.1:1"));
        assert!(!reachable("ssh://somewhere"));
    }

    #[test]
    fn a_listening_unix_socket_is_an_engine() {
        let dir = std::env::temp_dir().join(format!("holdfast-docker-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("docker.sock");
        let _ = std::fs::remove_file(&path);
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert!(reachable(&format!("unix://{}", path.display())));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
