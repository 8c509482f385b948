//! PgStore
use super::StoreError;
/// PostgreSQL store (to be written).
#[derive(Debug, Clone)]
pub struct PgStore;
#[allow(dead_code)]
fn _unused(_: StoreError) {}
