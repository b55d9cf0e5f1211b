//! `requestState` sealed: what a server hands the client to echo back on
//! its retry (`basic/patterns/mrtr.mdx`, "Server Requirements").
//!
//! The spec treats a returned state as attacker-controlled input: if it
//! influences anything, its integrity MUST be protected and a failed check
//! MUST be refused; the state SHOULD name the principal, expire soon, and be
//! bound to the request it was issued for. A [`StateSealer`] does all of it
//! with ChaCha20-Poly1305 (RFC 8439, RustCrypto's `chacha20poly1305`): the payload and its expiry are
//! encrypted, and the [`Binding`] (method, the request's salient params, the
//! principal) is the associated data. So a state presented on another
//! request, by another principal, changed in any bit, or under another key is
//! one error, [`StateError::Unauthentic`]; a late one is
//! [`StateError::Expired`]. Single use is not promised (the spec says so
//! too): a server whose state must be redeemed once records that itself.
//!
//! Deterministic like every core: the time is an input, and the nonces come
//! from the [`IdSource`] the caller gives (the OS CSPRNG in a shell, a
//! seeded one in tests). Expiry compares instants of one clock: a fleet
//! sharing a key passes a shared clock's instants (Unix milliseconds).

use crate::id_source::IdSource;
use crate::time::Instant;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::{ChaCha20Poly1305, KeyInit};
use serde_json::{json, Value};

/// Bytes of a sealer's key.
pub const KEY_LEN: usize = 32;
/// Bytes of a nonce, sent first in every state.
const NONCE_LEN: usize = 12;
/// Bytes of the authentication tag, after the ciphertext.
const TAG_LEN: usize = 16;

/// The prefix of this format, so that a later one can be told apart.
const PREFIX: &str = "s1.";
/// The longest state this sealer opens or makes, in bytes of its text: the
/// client echoes it on every retry.
pub const REQUEST_STATE_BYTES_MAX: usize = 16 * 1024;
/// The params no binding includes: the retry's own additions and its metadata.
const UNBOUND: [&str; 3] = ["_meta", "inputResponses", "requestState"];

/// What a state is bound to: the request (its method and salient params)
/// and who made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding(String);

impl Binding {
    /// The binding of a request `method` with `params` by `principal` (the
    /// authenticated caller, if the server knows one). For the three methods
    /// that may ask for input, what names the request: the tool or prompt
    /// and its arguments (absent and `{}` alike), or the resource; for any
    /// other, its params without what a retry adds (`inputResponses`,
    /// `requestState`) and `_meta`.
    pub fn of(method: &str, params: Option<&Value>, principal: Option<&str>) -> Binding {
        let field = |k: &str| params.and_then(|p| p.get(k)).cloned();
        let salient = match method {
            "tools/call" | "prompts/get" => json!({
                "name": field("name").unwrap_or(Value::Null),
                "arguments": field("arguments").filter(|a| !a.is_null()).unwrap_or_else(|| json!({})),
            })
            .to_string(),
            "resources/read" => json!({"uri": field("uri").unwrap_or(Value::Null)}).to_string(),
            _ => match params {
                Some(Value::Object(o)) => {
                    let kept: serde_json::Map<String, Value> = o
                        .iter()
                        .filter(|(k, _)| !UNBOUND.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    // serde_json's map is ordered by key: one text per value.
                    Value::Object(kept).to_string()
                }
                Some(other) => other.to_string(),
                None => "null".to_owned(),
            },
        };
        Binding(format!(
            "mcp-streamable requestState v1\n{method}\n{salient}\n{}",
            principal.unwrap_or("")
        ))
    }
}

/// Why a presented state was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not a state of this format, or longer than [`REQUEST_STATE_BYTES_MAX`].
    #[error("requestState is not one this server issued")]
    Malformed,
    /// Changed, issued for another request or principal, or under another key.
    #[error("requestState failed verification")]
    Unauthentic,
    /// Issued too long ago.
    #[error("requestState has expired")]
    Expired,
}

impl StateError {
    /// The client's fault: invalid params (-32602), as the spec's example has it.
    pub fn to_error(&self) -> crate::jsonrpc::ErrorObject {
        crate::jsonrpc::ErrorObject::new(crate::jsonrpc::INVALID_PARAMS, self.to_string())
    }
}

/// Seals and opens request states under one key.
pub struct StateSealer {
    key: [u8; KEY_LEN],
    nonces: IdSource,
    ttl_ms: u64,
}

impl std::fmt::Debug for StateSealer {
    /// Never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSealer")
            .field("ttl_ms", &self.ttl_ms)
            .finish_non_exhaustive()
    }
}

impl StateSealer {
    /// A sealer with `key` (share it between the instances of a fleet),
    /// drawing nonces from `nonces`; states live `ttl_ms` milliseconds.
    pub fn new(key: [u8; KEY_LEN], nonces: IdSource, ttl_ms: u64) -> Self {
        StateSealer {
            key,
            nonces,
            ttl_ms,
        }
    }

    /// How long a state lives.
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    /// A state carrying `data` for the retry of the request `binding` names.
    pub fn seal(&mut self, binding: &Binding, data: &Value, now: Instant) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        let (a, b) = (self.nonces.next_u64(), self.nonces.next_u64());
        nonce[..8].copy_from_slice(&a.to_le_bytes());
        nonce[8..].copy_from_slice(&b.to_le_bytes()[..4]);
        let expires = now.as_millis().saturating_add(self.ttl_ms);
        let plaintext = json!({"exp": expires, "data": data}).to_string();
        let mut bytes = nonce.to_vec();
        bytes.extend(seal(
            &self.key,
            &nonce,
            binding.0.as_bytes(),
            plaintext.as_bytes(),
        ));
        format!("{PREFIX}{}", BASE64.encode(&bytes))
    }

    /// The data of `state`, if this sealer issued it for `binding` and it has not expired.
    pub fn open(&self, state: &str, binding: &Binding, now: Instant) -> Result<Value, StateError> {
        if state.len() > REQUEST_STATE_BYTES_MAX {
            return Err(StateError::Malformed);
        }
        let bytes = state
            .strip_prefix(PREFIX)
            .and_then(|b64| BASE64.decode(b64).ok())
            .ok_or(StateError::Malformed)?;
        if bytes.len() < NONCE_LEN + TAG_LEN {
            return Err(StateError::Malformed);
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| StateError::Malformed)?;
        let plaintext =
            open(&self.key, &nonce, binding.0.as_bytes(), sealed).ok_or(StateError::Unauthentic)?;
        // Authentic, so written by `seal`: anything else is a key shared
        // with a different program, refused the same way.
        let mut v: Value =
            serde_json::from_slice(&plaintext).map_err(|_| StateError::Unauthentic)?;
        let expires = v
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or(StateError::Unauthentic)?;
        if now.as_millis() >= expires {
            return Err(StateError::Expired);
        }
        Ok(v.get_mut("data").map(Value::take).unwrap_or(Value::Null))
    }
}

/// ChaCha20-Poly1305 of `plaintext` under `aad`: the ciphertext, then the tag.
fn seal(key: &[u8; KEY_LEN], nonce: &[u8; NONCE_LEN], aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let msg = Payload {
        msg: plaintext,
        aad,
    };
    ChaCha20Poly1305::new(&(*key).into())
        .encrypt(&(*nonce).into(), msg)
        // Fails only past the cipher's length limit (256 GiB), far above
        // what any state carries.
        .unwrap_or_default()
}

/// The plaintext of `sealed` (ciphertext, then tag), if it is authentic.
fn open(
    key: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    sealed: &[u8],
) -> Option<Vec<u8>> {
    let msg = Payload { msg: sealed, aad };
    ChaCha20Poly1305::new(&(*key).into())
        .decrypt(&(*nonce).into(), msg)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The wiring of the AEAD (key, nonce, associated data, tag after the
    /// ciphertext) against RFC 8439's own example, section 2.8.2.
    #[test]
    fn the_aead_is_rfc_8439_chacha20_poly1305() {
        let key: [u8; 32] = std::array::from_fn(|i| 0x80 + i as u8);
        let nonce: [u8; 12] = hex("070000004041424344454647").try_into().unwrap();
        let aad = hex("50515253c0c1c2c3c4c5c6c7");
        let plaintext = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
        let sealed = seal(&key, &nonce, &aad, plaintext);
        let ciphertext = "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116";
        let tag = "1ae10b594f09e26a7e902ecbd0600691";
        assert_eq!(sealed, hex(&format!("{ciphertext}{tag}")));
        assert_eq!(
            open(&key, &nonce, &aad, &sealed).as_deref(),
            Some(&plaintext[..])
        );
        let mut changed = sealed.clone();
        changed[0] ^= 1;
        assert_eq!(open(&key, &nonce, &aad, &changed), None);
        assert_eq!(open(&key, &nonce, b"other", &sealed), None);
    }

    fn sealer() -> StateSealer {
        StateSealer::new([3; 32], IdSource::from_key([4; 32]), 60_000)
    }

    fn call(args: Value) -> Value {
        json!({"name": "book", "arguments": args, "_meta": {"x": 1}})
    }

    #[test]
    fn a_state_opens_on_its_own_retry_only() {
        let mut s = sealer();
        let t0 = Instant::from_millis(1_000);
        let b = Binding::of("tools/call", Some(&call(json!({"seat": 1}))), Some("alice"));
        let state = s.seal(&b, &json!({"round": 2}), t0);
        // The retry adds inputResponses, requestState and other _meta: same binding.
        let retry = json!({"name": "book", "arguments": {"seat": 1}, "inputResponses": {"k": 1}, "requestState": state, "_meta": {"y": 2}});
        let same = Binding::of("tools/call", Some(&retry), Some("alice"));
        assert_eq!(s.open(&state, &same, t0).unwrap(), json!({"round": 2}));
        // A first round without arguments, a retry with `{}`: one request.
        let bare = Binding::of("tools/call", Some(&json!({"name": "book"})), None);
        let empty = Binding::of(
            "tools/call",
            Some(&json!({"name": "book", "arguments": {}})),
            None,
        );
        assert_eq!(bare, empty);
        for other in [
            Binding::of("tools/call", Some(&call(json!({"seat": 2}))), Some("alice")),
            Binding::of(
                "prompts/get",
                Some(&call(json!({"seat": 1}))),
                Some("alice"),
            ),
            Binding::of(
                "tools/call",
                Some(&call(json!({"seat": 1}))),
                Some("mallory"),
            ),
            Binding::of("tools/call", Some(&call(json!({"seat": 1}))), None),
        ] {
            assert_eq!(s.open(&state, &other, t0), Err(StateError::Unauthentic));
        }
    }

    #[test]
    fn a_changed_late_or_foreign_state_is_refused() {
        let mut s = sealer();
        let b = Binding::of("tools/call", Some(&call(json!({}))), None);
        let t0 = Instant::from_millis(0);
        let state = s.seal(&b, &json!("d"), t0);
        assert_eq!(
            s.open(&format!("{state}-TAMPERED"), &b, t0),
            Err(StateError::Malformed)
        );
        let mut bytes = BASE64.decode(&state[PREFIX.len()..]).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let flipped = format!("{PREFIX}{}", BASE64.encode(&bytes));
        assert_eq!(s.open(&flipped, &b, t0), Err(StateError::Unauthentic));
        assert_eq!(
            s.open(&state, &b, Instant::from_millis(60_000)),
            Err(StateError::Expired)
        );
        assert!(s.open(&state, &b, Instant::from_millis(59_999)).is_ok());
        let other = StateSealer::new([5; 32], IdSource::from_key([4; 32]), 60_000);
        assert_eq!(other.open(&state, &b, t0), Err(StateError::Unauthentic));
        assert_eq!(s.open("", &b, t0), Err(StateError::Malformed));
        assert_eq!(
            s.open(&"s1.".repeat(10_000), &b, t0),
            Err(StateError::Malformed)
        );
    }

    #[test]
    fn a_long_state_opens_up_to_the_bound_and_not_past_it() {
        let mut s = sealer();
        assert_eq!(s.ttl_ms(), 60_000);
        let b = Binding::of("tools/call", None, None);
        let data = json!("x".repeat(4_000));
        let long = s.seal(&b, &data, Instant::ZERO);
        assert!(long.len() > 4_000 && long.len() <= REQUEST_STATE_BYTES_MAX);
        assert_eq!(s.open(&long, &b, Instant::ZERO), Ok(data));
        let too_long = s.seal(&b, &json!("x".repeat(13_000)), Instant::ZERO);
        assert!(too_long.len() > REQUEST_STATE_BYTES_MAX);
        assert_eq!(
            s.open(&too_long, &b, Instant::ZERO),
            Err(StateError::Malformed)
        );
    }

    #[test]
    fn a_state_shorter_than_nonce_and_tag_is_malformed_and_one_as_long_unauthentic() {
        let s = sealer();
        let b = Binding::of("tools/call", None, None);
        let of = |n: usize| format!("{PREFIX}{}", BASE64.encode(vec![0u8; n]));
        let short = NONCE_LEN + TAG_LEN - 1;
        assert_eq!(
            s.open(&of(short), &b, Instant::ZERO),
            Err(StateError::Malformed)
        );
        assert_eq!(
            s.open(&of(4), &b, Instant::ZERO),
            Err(StateError::Malformed)
        );
        assert_eq!(
            s.open(&of(short + 1), &b, Instant::ZERO),
            Err(StateError::Unauthentic)
        );
    }

    #[test]
    fn a_resource_binds_its_uri_and_other_methods_all_but_what_a_retry_adds() {
        let read = |p: Value| Binding::of("resources/read", Some(&p), None);
        assert_eq!(
            read(json!({"uri": "file:///a", "cursor": "c1"})),
            read(json!({"uri": "file:///a"}))
        );
        assert_ne!(
            read(json!({"uri": "file:///a"})),
            read(json!({"uri": "file:///b"}))
        );
        let other = |p: Value| Binding::of("completion/complete", Some(&p), None);
        assert_ne!(other(json!({"a": 1})), other(json!({"a": 2})));
        assert_eq!(
            other(json!({"a": 1, "_meta": {"x": 1}, "requestState": "s"})),
            other(json!({"a": 1, "inputResponses": {}}))
        );
    }

    #[test]
    fn debug_shows_the_lifetime_and_never_the_key() {
        let shown = format!("{:?}", sealer());
        assert!(
            shown.contains("StateSealer") && shown.contains("60000"),
            "{shown}"
        );
        assert!(!shown.contains("key"), "{shown}");
    }

    #[test]
    fn two_states_of_one_request_differ_and_the_same_seed_repeats_them() {
        let b = Binding::of("tools/call", None, None);
        let (mut x, mut y) = (sealer(), sealer());
        let a1 = x.seal(&b, &json!(1), Instant::ZERO);
        let a2 = x.seal(&b, &json!(1), Instant::ZERO);
        assert_ne!(a1, a2, "a fresh nonce each time");
        assert_eq!(
            a1,
            y.seal(&b, &json!(1), Instant::ZERO),
            "same seed, same state"
        );
    }
}
