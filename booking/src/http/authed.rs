//! The caller's verified credential, as an extractor.
//!
//! It is the first extractor of every authenticated handler, so a request
//! without a valid `Authorization: Bearer` token is answered `401` before its
//! path, query or body is parsed: an anonymous caller learns nothing about
//! what the service would have refused. What the credential may touch (an
//! event, operator routes) is checked after parsing, with
//! [`AppState::authorize`] and [`AppState::require_admin`].

use super::auth::Claims;
use super::problem::Problem;
use super::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use std::sync::Arc;

/// A request's verified (signed, unexpired) claims.
#[derive(Debug, Clone)]
pub struct Authed(pub Claims);

impl FromRequestParts<Arc<AppState>> for Authed {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, st: &Arc<AppState>) -> Result<Self, Problem> {
        let value = parts.headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
        st.auth.verify_header(value).map(Authed)
    }
}
