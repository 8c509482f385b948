//! Booking's integration tests, one test binary: each file of this folder
//! is a module of it (one link of the whole stack instead of one per file,
//! which is most of `ci/test`'s build when booking changes). The shared
//! support modules are declared here once; test files `use crate::` them.

mod common;
mod differential_support;
mod payment_support;
mod process_support;

mod bookingd_process;
mod cache_kept_restart;
mod cancelled_calls;
mod differential;
mod differential_plants;
mod guard_layers;
mod hold_cost;
mod hold_limit;
mod http_router;
mod payment_fake_provider_e2e;
mod payment_fake_provider_process;
mod payment_workflow;
mod races;
mod reconcile_claim;
mod redis_rooms;
mod room_records;
mod store_paths;
mod story;
mod waiting_room_http;
mod waiting_room_processes;
