//! The simulator's integration tests but the library's and the worlds',
//! one test binary: each file of this folder is a module of it (each
//! binary links the whole simulator: fewer binaries, a faster `ci/test`).
//! `library` stays a target of its own (`ci/mutants` builds it alone), and
//! so does `world` (its own folder of modules).

mod auditor;
mod chaos;
mod cli;
mod function_length;
mod shrink;
mod timeline;
mod turmoil_http;
