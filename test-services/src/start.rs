//! Starting a service's container (feature `containers`).

use crate::select::Service;

/// A container that could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The crate was built without the feature `containers`.
    #[error("this build has no container support (feature `containers`)")]
    NotCompiled,
    /// testcontainers failed.
    #[error("starting {image}:{tag}: {reason}")]
    Failed {
        /// The image.
        image: &'static str,
        /// The tag.
        tag: &'static str,
        /// What testcontainers said.
        reason: String,
    },
}

/// The label on every container this crate starts (`docker rm -f $(docker ps
/// -q --filter label=holdfast.test-service)` removes them).
pub const LABEL: &str = "holdfast.test-service";

#[cfg(feature = "containers")]
fn service_label(service: Service) -> &'static str {
    match service {
        Service::Postgres => "postgres",
        Service::Redis => "redis",
    }
}

/// Starts `image:tag` for `service`, or finds the one an earlier test process
/// started (testcontainers' reuse: nextest runs every test in a process of its
/// own, and each would otherwise start a server), and returns its URL. The
/// container is kept running after the tests; tests make databases and keys
/// of their own, so sharing it is safe.
#[cfg(feature = "containers")]
pub fn container(service: Service, image: &'static str, tag: &'static str) -> Result<String, StartError> {
    use testcontainers::{ImageExt, ReuseDirective};
    use testcontainers_modules::testcontainers::runners::SyncRunner;
    let failed = move |e: &dyn std::fmt::Display| StartError::Failed { image, tag, reason: e.to_string() };
    // The blocking runner starts a runtime of its own, which tokio refuses
    // inside a test's runtime: start it on a thread of its own (test support,
    // never in simulated code).
    #[allow(clippy::disallowed_methods)]
    std::thread::spawn(move || -> Result<String, StartError> {
        match service {
            Service::Postgres => {
                let c = testcontainers_modules::postgres::Postgres::default()
                    .with_tag(tag)
                    .with_label(LABEL, service_label(service))
                    .with_reuse(ReuseDirective::Always)
                    .start()
                    .map_err(|e| failed(&e))?;
                let host = c.get_host().map_err(|e| failed(&e))?;
                let port = c.get_host_port_ipv4(5432).map_err(|e| failed(&e))?;

                Ok(format!("postgres://postgres:postgres@{host}:{port}/postgres"))
            }
            Service::Redis => {
                let c = testcontainers_modules::redis::Redis::default()
                    .with_tag(tag)
                    .with_label(LABEL, service_label(service))
                    .with_reuse(ReuseDirective::Always)
                    .start()
                    .map_err(|e| failed(&e))?;
                let host = c.get_host().map_err(|e| failed(&e))?;
                let port = c.get_host_port_ipv4(6379).map_err(|e| failed(&e))?;
                Ok(format!("redis://{host}:{port}"))
            }
        }
    })
    .join()
    .map_err(|_| StartError::Failed { image, tag, reason: "the starting thread panicked".into() })?
}

/// Without the feature `containers` there is nothing to start.
#[cfg(not(feature = "containers"))]
pub fn container(_service: Service, _image: &'static str, _tag: &'static str) -> Result<String, StartError> {
    Err(StartError::NotCompiled)
}
