//! Multi round-trip requests (MRTR, 2026-07-28 `basic/patterns/mrtr.mdx`):
//! the 2026-07-28 era's only way for a server to ask the client for input. The
//! server answers with an `InputRequiredResult` ([`input`]); the client
//! gathers the input and retries the request under a new id, echoing the
//! opaque `requestState`, which the server seals ([`state`]) because it
//! comes back through the client. Nothing here keeps state between rounds:
//! any instance of a fleet can serve any round.
//!
//! The client's side of the loop (re-issuing with the input under one
//! handle) is `client/session/mrtr.rs`: `ClientEvent::InputRequired` and
//! `ClientSession::provide_input`.

pub mod input;
pub mod state;

pub use input::{
    check_asked, input_required, input_responses, is_input_required, missing_capability,
    request_state, Asked, ClientCapabilities, InputError, InputKind, InputRequests,
};
pub use state::{Binding, StateError, StateSealer};
