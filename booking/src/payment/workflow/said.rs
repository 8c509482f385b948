//! What the provider said, as the reason a release of an unresolved payment
//! records: the provider's answers a reason can name (the rest are errors,
//! quoted as they came). The dispatcher and the reconciler write them; the
//! simulator's auditor holds each such release to the provider's answers.

/// The provider answered the payment is still processing (a status read).
pub const STILL_PROCESSING: &str = "provider: payment still processing";
/// The provider answered processing where a final answer was sought (applied as unknown).
pub const PROCESSING: &str = "provider: payment processing";
/// The provider answered it has no record of the payment (`404` to a status read).
pub const NO_RECORD: &str = "provider has no record of the payment";
