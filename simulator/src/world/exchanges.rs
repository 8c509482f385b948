//! Counting the HTTP exchanges of one world: every request any simulated
//! server (a service host or the provider) answers. A seed's cost is almost
//! all exchanges, so the count explains its wall time (docs/BENCHMARKS.md).

use axum::Router;
use axum::extract::Request;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A world's exchange counter, shared by its servers.
#[derive(Debug, Clone, Default)]
pub struct Exchanges(Arc<AtomicU64>);

impl Exchanges {
    /// `router` counting every request it receives here. Observation only:
    /// the request passes on unchanged.
    pub fn count(&self, router: Router) -> Router {
        let n = self.0.clone();
        // tower's synchronous map: no boxed future per request (axum's
        // `middleware::map_request` allocates one and clones the route).
        router.layer(tower::util::MapRequestLayer::new(move |req: Request| {
            n.fetch_add(1, Ordering::Relaxed);
            req
        }))
    }

    /// Requests counted so far.
    pub fn total(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[tokio::test]
    async fn every_request_is_counted_once_and_passes_unchanged() {
        let ex = Exchanges::default();
        let app = ex.count(Router::new().route("/x", axum::routing::get(|| async { "ok" })));
        for path in ["/x", "/x", "/missing"] {
            let resp = app.clone().oneshot(Request::get(path).body(axum::body::Body::empty()).unwrap()).await.unwrap();
            assert_eq!(resp.status().is_success(), path == "/x");
        }
        assert_eq!(ex.total(), 3);
    }
}
