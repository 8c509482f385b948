//! Which PostgreSQL and Redis servers the tests run against.
//!
//! The rule, for each service (PostgreSQL, then Redis), first match wins:
//! 1. its URL is given (`HOLDFAST_TEST_DATABASE_URL`, a URL of the server's
//!    maintenance database; `HOLDFAST_TEST_REDIS_URL`): that server is used;
//! 2. this crate was built with the feature `containers` and a Docker engine
//!    answers (`DOCKER_HOST`, else `/var/run/docker.sock`): a container is
//!    started once per test process (`postgres:15-alpine`, `redis:7-alpine`)
//!    and used; testcontainers' reaper removes it after the process ends;
//! 3. otherwise the local default (`postgres://postgres@127.0.0.1:5432/postgres`,
//!    `redis://127.0.0.1:6379`), as `ci/test` starts them.
//!
//! [`link::Link`] puts a link the caller can cut between a process and a
//! server; [`own_postgres::OwnPostgres`] is a PostgreSQL server of the
//! caller's own, to stop and start.
//!
//! [`select`] is the rule as a pure function (tested here); [`postgres_url`]
//! and [`redis_url`] apply it to this process's environment.

mod docker;
pub mod link;
pub mod own_postgres;
mod select;
mod start;

pub use docker::docker_reachable;
pub use select::{Probe, SelectError, Service, Source, select};
pub use start::{LABEL, StartError};

use std::sync::OnceLock;

/// The PostgreSQL maintenance database URL the tests use (see the crate's rule).
///
/// Panics (it is test support) when `HOLDFAST_TEST_DATABASE_URL` is not a
/// PostgreSQL URL, or when a container was to be started and could not be.
pub fn postgres_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| resolve(Service::Postgres)).clone()
}

/// The Redis URL the tests use (see the crate's rule). Panics as [`postgres_url`] does.
pub fn redis_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| resolve(Service::Redis)).clone()
}

fn resolve(service: Service) -> String {
    let probe = Probe { containers_compiled: cfg!(feature = "containers"), docker_reachable: docker_reachable() };
    let source = select(service, |var| std::env::var(var).ok(), probe).unwrap_or_else(|e| panic!("test services: {e}"));
    match source {
        Source::Given { url, .. } | Source::Default { url } => url,
        Source::Container { image, tag } => {
            start::container(service, image, tag).unwrap_or_else(|e| panic!("test services: {e}"))
        }
    }
}
