//! Running many seeds: each seed in a process of its own (`pool`, `runner`),
//! their verdicts and replay lines (`verdict`, `failure`, `failure_report`),
//! the reports a person or CI reads (`report`, `junit`), the wall-time
//! budget of `run --time-budget` (`budget`), and the binary's allocator
//! tuning (`allocator`).

pub mod allocator;
pub mod budget;
pub mod failure;
pub mod failure_report;
pub mod junit;
pub mod pool;
pub mod report;
pub mod runner;
pub mod verdict;
