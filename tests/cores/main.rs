//! The sans-IO cores driven by hand, in one binary: the server and client
//! sessions, their drivers and budgets, both eras, the fleet's instance
//! core, and the properties each keeps under proptest. These tests are
//! quick; one binary instead of one per file saves linking the crate twenty
//! times. `cargo test --profile test-release --test cores server_rules::`
//! runs one file's tests.

#[path = "../common/mod.rs"]
mod common;

mod budgets;
mod client_eras;
mod drain;
mod driver;
mod era_2026;
mod era_props;
mod fleet_instance;
mod fleet_schedules;
mod isolation;
mod listen;
mod pair_flows;
mod pair_props;
mod pair_races;
mod presets;
mod server_props;
mod server_rules;
mod session_ids;
mod sse_props;
mod traces;
mod wire_props;
