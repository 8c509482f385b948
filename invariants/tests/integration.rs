//! The invariants crate's integration tests, one test binary: each file of
//! this folder is a module of it (one link instead of one per file).

mod model_independence;
mod names;
