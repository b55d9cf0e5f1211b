//! A transport's pool of connections (`settings.connections_max`) against
//! the streams a server holds open: a client that lets a `subscriptions/listen`
//! take the connection its requests need, or whose answer to a question
//! waits behind the stream that carried it, is caught.

use crate::check_support::{model, verdict};
use mcp_streamable::policy::{AnswerRoom, ClientPolicy, ListenPool};
use mcp_streamable_check::run;

/// The bundled model `name` under FIXED x FIXED holds, exhaustively; with
/// one client knob changed by `edit`, every other FIXED, it breaks L2.
fn fixed_holds_and_the_other_value_is_l2(name: &str, edit: impl FnOnce(&mut ClientPolicy)) {
    let fixed = model(name, "FIXED", "FIXED");
    let held = run(&fixed, 2);
    assert!(held.exhaustive(), "{name}: {held:?}");
    assert_eq!(verdict(&held), None, "{name}");
    let mut other = fixed.clone();
    edit(&mut other.client);
    let caught = run(&other, 2);
    let (id, steps) = verdict(&caught).expect("caught");
    assert_eq!(id, "L2", "{name}: {caught:?}");
    assert!(steps > 5, "{name}: {steps} steps");
}

/// `listens_fill_the_pool`: FIXED refuses the listen that would take the
/// pool's last connection and holds (`check_models` asserts its states);
/// the same client with `ListenPool::IgnoringPool` leaves its call waiting
/// behind two listens: L2.
#[test]
fn a_listen_that_takes_the_pools_last_connection_is_caught() {
    fixed_holds_and_the_other_value_is_l2("listens_fill_the_pool", |c| {
        c.listen_pool = ListenPool::IgnoringPool;
    });
}

/// `answer_behind_its_question`: FIXED's call stream yields the pool's one
/// connection to the answer its tool awaits and holds; the same client
/// with `AnswerRoom::Wait` leaves the answer queued behind that stream: L2.
#[test]
fn an_answer_queued_behind_its_question_is_caught() {
    fixed_holds_and_the_other_value_is_l2("answer_behind_its_question", |c| {
        c.answer_room = AnswerRoom::Wait;
    });
}
