//! A transport's pool of connections (`settings.connections_max`) against
//! the streams a server holds open: a client that lets a `subscriptions/listen`
//! take the connection its requests need, or whose answer to a question
//! waits behind the stream that carried it, is caught.

use crate::check_support::{model, verdict};
use mcp_streamable::policy::{AnswerRoom, ListenPool};
use mcp_streamable_check::run;

/// `listens_fill_the_pool`: FIXED refuses the listen that would take the
/// pool's last connection and holds (`check_models` asserts its states);
/// the same client with `ListenPool::IgnoringPool`, every other knob
/// FIXED, leaves its call waiting behind two listens: L2.
#[test]
fn a_listen_that_takes_the_pools_last_connection_is_caught() {
    let fixed = model("listens_fill_the_pool", "FIXED", "FIXED");
    let held = run(&fixed, 2);
    assert!(held.exhaustive(), "{held:?}");
    assert_eq!(verdict(&held), None);
    let mut ignoring = fixed.clone();
    ignoring.client.listen_pool = ListenPool::IgnoringPool;
    let caught = run(&ignoring, 2);
    let (id, steps) = verdict(&caught).expect("caught");
    assert_eq!(id, "L2", "{caught:?}");
    assert!(steps > 5, "{steps} steps");
}

/// `answer_behind_its_question`: FIXED's call stream yields the pool's one
/// connection to the answer its tool awaits and holds; the same client
/// with `AnswerRoom::Wait` leaves the answer queued behind that stream: L2.
#[test]
fn an_answer_queued_behind_its_question_is_caught() {
    let fixed = model("answer_behind_its_question", "FIXED", "FIXED");
    let held = run(&fixed, 2);
    assert!(held.exhaustive(), "{held:?}");
    assert_eq!(verdict(&held), None);
    let mut waiting = fixed.clone();
    waiting.client.answer_room = AnswerRoom::Wait;
    let caught = run(&waiting, 2);
    let (id, steps) = verdict(&caught).expect("caught");
    assert_eq!(id, "L2", "{caught:?}");
    assert!(steps > 5, "{steps} steps");
}
