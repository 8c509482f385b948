//! The `simulator` binary's commands, one module each (`main.rs` parses the
//! command line and calls one): [`run`] (the library over seeds),
//! [`replay`] (one seed, its trace and timeline), [`plants`] (the planted-bug
//! catalog's proof), [`chaos`] (the real stack); what they share: the
//! scenarios and harness options a run is made of ([`select`]) and the
//! argument parsers ([`parse`]). Each handler returns the process's exit
//! code: 0 when everything passed, 1 when anything failed, 2 on bad usage.

pub mod chaos;
pub mod parse;
pub mod plants;
pub mod replay;
pub mod run;
pub mod select;

use std::process::ExitCode;

/// Prints `msg` as a usage error; exit code 2.
pub fn usage_error(msg: String) -> ExitCode {
    eprintln!("simulator: {msg}");
    ExitCode::from(2)
}
