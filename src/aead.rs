//! ChaCha20-Poly1305, the AEAD of RFC 8439 section 2.8, on the crate's own
//! ChaCha20 block ([`crate::chacha`]) and Poly1305 ([`crate::poly1305`]).
//! It seals MRTR `requestState` ([`crate::mrtr::state`]): the spec requires a
//! server to protect the integrity of state that passes through the client,
//! and a sealed state also keeps the application's data private.
//!
//! A nonce must never repeat under one key; callers draw it from a CSPRNG
//! (96 random bits: a repeat is not expected before about 2^48 messages).

use crate::chacha;
use crate::poly1305;

/// Bytes of a key.
pub const KEY_LEN: usize = 32;
/// Bytes of a nonce.
pub const NONCE_LEN: usize = 12;
/// Bytes of a tag.
pub const TAG_LEN: usize = 16;

/// The message was not sealed under this key, nonce and associated data, or
/// was changed since.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("authentication failed")]
pub struct Unauthentic;

/// `plaintext` encrypted, followed by its tag over `aad` and the ciphertext.
pub fn seal(key: &[u8; KEY_LEN], nonce: &[u8; NONCE_LEN], aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let mut out = plaintext.to_vec();
    chacha::xor_ietf(key, nonce, 1, &mut out);
    let tag = tag(key, nonce, aad, &out);
    out.extend_from_slice(&tag);
    out
}

/// The plaintext of `sealed` (ciphertext ‖ tag), if it is authentic.
pub fn open(
    key: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    sealed: &[u8],
) -> Result<Vec<u8>, Unauthentic> {
    let split = sealed.len().checked_sub(TAG_LEN).ok_or(Unauthentic)?;
    let (ciphertext, got) = sealed.split_at(split);
    let got: &[u8; TAG_LEN] = got.try_into().map_err(|_| Unauthentic)?;
    if !poly1305::tags_equal(&tag(key, nonce, aad, ciphertext), got) {
        return Err(Unauthentic);
    }
    let mut out = ciphertext.to_vec();
    chacha::xor_ietf(key, nonce, 1, &mut out);
    Ok(out)
}

/// Section 2.8: the tag over `aad` and the ciphertext, each padded to 16
/// bytes, then both lengths; keyed by block 0 of the keystream.
fn tag(
    key: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    ciphertext: &[u8],
) -> [u8; TAG_LEN] {
    let mut one_time = [0u8; 32];
    chacha::xor_ietf(key, nonce, 0, &mut one_time);
    let pad = |n: usize| (16 - n % 16) % 16;
    let mut data = Vec::with_capacity(aad.len() + ciphertext.len() + 48);
    data.extend_from_slice(aad);
    data.resize(data.len() + pad(aad.len()), 0);
    data.extend_from_slice(ciphertext);
    data.resize(data.len() + pad(ciphertext.len()), 0);
    data.extend_from_slice(&(aad.len() as u64).to_le_bytes());
    data.extend_from_slice(&(ciphertext.len() as u64).to_le_bytes());
    poly1305::tag(&one_time, &data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::poly1305::tests::hex;

    #[test]
    fn matches_rfc_8439_2_8_2() {
        let key: [u8; 32] = std::array::from_fn(|i| 0x80 + i as u8);
        let nonce: [u8; 12] = hex("070000004041424344454647").try_into().unwrap();
        let aad = hex("50515253c0c1c2c3c4c5c6c7");
        let plaintext = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
        let sealed = seal(&key, &nonce, &aad, plaintext);
        let want = hex(concat!(
            "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b",
            "1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc",
            "3ff4def08e4b7a9de576d26586cec64b6116",
            "1ae10b594f09e26a7e902ecbd0600691",
        ));
        assert_eq!(sealed, want);
        assert_eq!(open(&key, &nonce, &aad, &sealed).unwrap(), plaintext);
    }

    #[test]
    fn round_trips_and_refuses_any_change() {
        let key = [7u8; 32];
        let nonce = [9u8; 12];
        let sealed = seal(&key, &nonce, b"aad", b"hello, world");
        assert_eq!(
            open(&key, &nonce, b"aad", &sealed).unwrap(),
            b"hello, world"
        );
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x80;
            assert_eq!(
                open(&key, &nonce, b"aad", &bad),
                Err(Unauthentic),
                "byte {i}"
            );
        }
        assert_eq!(open(&key, &nonce, b"aaD", &sealed), Err(Unauthentic));
        assert_eq!(open(&key, &[8; 12], b"aad", &sealed), Err(Unauthentic));
        assert_eq!(open(&[6; 32], &nonce, b"aad", &sealed), Err(Unauthentic));
        assert_eq!(open(&key, &nonce, b"aad", &sealed[..15]), Err(Unauthentic));
    }
}
