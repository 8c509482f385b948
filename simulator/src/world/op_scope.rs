//! Which client request a service host is serving: the simulated clients
//! number each request (`x-holdfast-op`, the trace's op id), and a layer
//! around each service host's router keeps that number for the request's
//! task, so the store calls it makes are traced with it
//! ([`crate::world::traced_store`]). Background work (dispatcher, reconciler,
//! sweeper, webhooks) carries none.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use invariants::trace::OpId;

/// The header a simulated client numbers its request with.
pub const OP_HEADER: &str = "x-holdfast-op";

tokio::task_local! {
    static CURRENT_OP: Option<OpId>;
}

/// The op id of the request this task is serving, if any.
pub fn current() -> Option<OpId> {
    CURRENT_OP.try_with(|op| *op).ok().flatten()
}

/// The layer's function: serves `req` with its op id in scope.
pub async fn scoped(req: Request, next: Next) -> Response {
    let op = req.headers().get(OP_HEADER).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<OpId>().ok());
    CURRENT_OP.scope(op, next.run(req)).await
}

/// `router` with every request's op id in scope.
pub fn layer(router: axum::Router) -> axum::Router {
    router.layer(axum::middleware::from_fn(scoped))
}
