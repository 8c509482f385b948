//! Request extractors whose rejections are problem documents, and the
//! event id's shape check every event route makes.

use super::problem::Problem;
use crate::model::{EventId, valid_id};
use axum::extract::{FromRequest, FromRequestParts};

/// JSON body extractor whose rejections are problem documents.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(Problem))]
pub struct ApiJson<T>(pub T);

/// Path extractor whose rejections are problem documents.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(Problem))]
pub struct ApiPath<T>(pub T);

/// Query extractor whose rejections are problem documents.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(Problem))]
pub struct ApiQuery<T>(pub T);

/// `400` unless `event_id` is 1..=64 characters of `[A-Za-z0-9_.-]`.
pub(crate) fn check_event_id(event_id: &EventId) -> Result<(), Problem> {
    if valid_id(event_id) {
        Ok(())
    } else {
        Err(Problem::bad_request("event_id must be 1..=64 characters of [A-Za-z0-9_.-]"))
    }
}
