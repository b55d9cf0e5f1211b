//! Session ids no one can predict (R20, R28).
//!
//! The attack that broke the old ids: SplitMix64's output function is a
//! bijection, so one observed 64-bit half of a session id gives back the
//! generator's state, and a short search over how many draws sit between
//! two ids predicts the next id minted for somebody else. The attack is run
//! against a reproducible source first (it must succeed there, or the test
//! proves nothing), then against the shell's default source (it must fail).

use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::SessionId;
use mcp_streamable_hyper::{EverythingApp, Server, ServerHandle, ServerOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

// ---- the attacker's side ---------------------------------------------------

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The inverse of `x ^ (x >> s)`.
fn unshift(y: u64, s: u32) -> u64 {
    let mut x = y;
    let mut k = s;
    while k < 64 {
        x = y ^ (x >> s);
        k += s;
    }
    x
}

/// The multiplicative inverse of an odd `a` modulo 2^64 (Newton's method).
fn inverse(a: u64) -> u64 {
    let mut x = a;
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    x
}

fn unmix(z: u64) -> u64 {
    let z = unshift(z, 31).wrapping_mul(inverse(0x94D0_49BB_1331_11EB));
    let z = unshift(z, 27).wrapping_mul(inverse(0xBF58_476D_1CE4_E5B9));
    unshift(z, 30)
}

/// The output of a SplitMix64 seeded with `seed` after `skip` draws.
fn draw(seed: u64, skip: u64) -> u64 {
    mix(seed.wrapping_add(GAMMA.wrapping_mul(skip + 1)))
}

fn halves(id: &SessionId) -> (u64, u64) {
    let bits = u128::from_str_radix(id.as_str(), 16).expect("hex id");
    ((bits >> 64) as u64, bits as u64)
}

/// Every id the attacker would try next, having seen `seen`: the generator
/// behind it is recovered from its first half (checked against the second),
/// then it is taken to be a child seeded by a parent SplitMix64 after up to
/// 4 draws; the parent's next outputs (up to 4 ahead) seed the next child,
/// whose id comes after up to 4 draws. 64 guesses, or none if `seen` is not
/// a SplitMix64 output at all.
fn predictions(seen: &SessionId) -> Vec<SessionId> {
    let (hi, lo) = halves(seen);
    let state = unmix(hi);
    if mix(state.wrapping_add(GAMMA)) != lo {
        return Vec::new();
    }
    let mut out = Vec::new();
    for child_skip in 0..4u64 {
        let child_seed = state.wrapping_sub(GAMMA.wrapping_mul(child_skip + 1));
        let parent_state = unmix(child_seed);
        for ahead in 1..=4u64 {
            let next_child = mix(parent_state.wrapping_add(GAMMA.wrapping_mul(ahead)));
            for skip in 0..4u64 {
                let bits = (u128::from(draw(next_child, skip)) << 64)
                    | u128::from(draw(next_child, skip + 1));
                out.push(SessionId::from_bits(bits));
            }
        }
    }
    out
}

// ---- the victim's side -------------------------------------------------------

async fn start(ids: IdSource) -> ServerHandle {
    let options = ServerOptions {
        ids,
        ..ServerOptions::default()
    };
    Server::bind(
        "127.0.0.1:0".parse().unwrap(),
        options,
        EverythingApp::default,
        None,
    )
    .await
    .expect("bind loopback")
}

/// A bare `initialize` over a fresh TCP connection; the id it was given.
fn initialize(addr: SocketAddr) -> SessionId {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"attacker","version":"0"}}}"#;
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("answer");
    let line = answer
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("mcp-session-id:"))
        .unwrap_or_else(|| panic!("no session id in {answer}"));
    line.split_once(':').unwrap().1.trim().parse().unwrap()
}

async fn ids_from_shell(ids: IdSource, n: usize) -> Vec<SessionId> {
    let server = start(ids).await;
    let addr = server.addr.unwrap();
    let out = tokio::task::spawn_blocking(move || (0..n).map(|_| initialize(addr)).collect())
        .await
        .unwrap();
    server.shutdown().await;
    out
}

/// How many of `ids[i + 1]` the attacker predicts from `ids[i]`.
fn predicted(ids: &[SessionId]) -> usize {
    ids.windows(2)
        .filter(|w| predictions(&w[0]).contains(&w[1]))
        .count()
}

#[test]
fn the_inverse_inverts() {
    for x in [0u64, 1, 0xdead_beef, u64::MAX, GAMMA] {
        assert_eq!(unmix(mix(x)), x);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attack_works_on_a_reproducible_source() {
    let ids = ids_from_shell(IdSource::reproducible(0x1234_5678), 4).await;
    assert_eq!(
        predicted(&ids),
        3,
        "the attack must predict every next id of a reproducible source, or this file tests nothing: {ids:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attack_fails_on_the_shells_default_ids() {
    let ids = ids_from_shell(ServerOptions::default().ids, 8).await;
    for id in &ids {
        assert!(
            predictions(id).is_empty(),
            "{id} is consistent with a SplitMix64 output"
        );
    }
    assert_eq!(predicted(&ids), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_ids_keep_128_bits() {
    let ids = ids_from_shell(ServerOptions::default().ids, 64).await;
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), ids.len(), "distinct");
    let bits: Vec<u128> = ids
        .iter()
        .map(|id| {
            assert_eq!(id.as_str().len(), 32, "{id}: 128 bits as 32 hex digits");
            u128::from_str_radix(id.as_str(), 16).unwrap()
        })
        .collect();
    // Every one of the 128 bit positions takes both values across 64 ids
    // (a fixed bit would fail this with certainty; a fair one by 2^-63).
    let (ones, zeros) = bits
        .iter()
        .fold((0u128, 0u128), |(o, z), b| (o | b, z | !b));
    assert_eq!(ones, u128::MAX, "some bit is always 0");
    assert_eq!(zeros, u128::MAX, "some bit is always 1");
}

#[test]
fn the_core_default_is_secure_and_the_seeded_source_is_opt_in() {
    use mcp_streamable::policy::ServerPolicy;
    use mcp_streamable::server::{EndpointConfig, ServerEndpoint};
    assert!(ServerOptions::default().ids.is_secure());
    let a = ServerEndpoint::new(EndpointConfig::default(), ServerPolicy::FIXED);
    let b = ServerEndpoint::new(EndpointConfig::default(), ServerPolicy::FIXED);
    assert_ne!(a, b, "two default endpoints hold different keys");
    let c = ServerEndpoint::with_ids(
        EndpointConfig::default(),
        ServerPolicy::FIXED,
        IdSource::reproducible(5),
    );
    let d = ServerEndpoint::with_ids(
        EndpointConfig::default(),
        ServerPolicy::FIXED,
        IdSource::reproducible(5),
    );
    assert_eq!(c, d, "same seed, same endpoint");
}
