//! Poly1305, the one-time authenticator of RFC 8439 section 2.5, written from
//! the RFC (26-bit limbs, so every product fits in 64 bits); its test vectors
//! pin it below. Used only inside [`crate::aead`], which derives a fresh key
//! per message: a Poly1305 key must never authenticate two messages.

const MASK: u64 = 0x3ff_ffff;

/// The 16-byte tag of `msg` under the one-time `key` (r ‖ s).
pub fn tag(key: &[u8; 32], msg: &[u8]) -> [u8; 16] {
    let word = |b: &[u8], at: usize| {
        u64::from(u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
    };
    // r, clamped as section 2.5 says, in five 26-bit limbs.
    let r = [
        word(key, 0) & 0x3ff_ffff,
        (word(key, 3) >> 2) & 0x3ff_ff03,
        (word(key, 6) >> 4) & 0x3ff_c0ff,
        (word(key, 9) >> 6) & 0x3f0_3fff,
        (word(key, 12) >> 8) & 0x00f_ffff,
    ];
    let s5 = [r[1] * 5, r[2] * 5, r[3] * 5, r[4] * 5];
    let mut h = [0u64; 5];
    for chunk in msg.chunks(16) {
        // Each block with a 1 byte past its end (the 2^128 or 2^(8·len) bit).
        let mut block = [0u8; 17];
        block[..chunk.len()].copy_from_slice(chunk);
        block[chunk.len()] = 1;
        h[0] += word(&block, 0) & MASK;
        h[1] += (word(&block, 3) >> 2) & MASK;
        h[2] += (word(&block, 6) >> 4) & MASK;
        h[3] += (word(&block, 9) >> 6) & MASK;
        h[4] += (word(&block, 12) >> 8) | (u64::from(block[16]) << 24);
        // h *= r (mod 2^130 - 5): a limb past the top wraps around times 5.
        let d = [
            h[0] * r[0] + h[1] * s5[3] + h[2] * s5[2] + h[3] * s5[1] + h[4] * s5[0],
            h[0] * r[1] + h[1] * r[0] + h[2] * s5[3] + h[3] * s5[2] + h[4] * s5[1],
            h[0] * r[2] + h[1] * r[1] + h[2] * r[0] + h[3] * s5[3] + h[4] * s5[2],
            h[0] * r[3] + h[1] * r[2] + h[2] * r[1] + h[3] * r[0] + h[4] * s5[3],
            h[0] * r[4] + h[1] * r[3] + h[2] * r[2] + h[3] * r[1] + h[4] * r[0],
        ];
        let mut carry = 0;
        for i in 0..5 {
            let v = d[i] + carry;
            h[i] = v & MASK;
            carry = v >> 26;
        }
        h[0] += carry * 5;
        h[1] += h[0] >> 26;
        h[0] &= MASK;
    }
    // Carry fully, then take h - p if h >= p.
    let mut carry = 0;
    for limb in h.iter_mut().skip(1) {
        *limb += carry;
        carry = *limb >> 26;
        *limb &= MASK;
    }
    h[0] += carry * 5;
    h[1] += h[0] >> 26;
    h[0] &= MASK;
    let mut g = [0u64; 5];
    let mut carry = 5;
    for i in 0..5 {
        let v = h[i] + carry;
        g[i] = v & MASK;
        carry = v >> 26;
    }
    // h + 5 reaches 2^130 exactly when h >= p: then g = h + 5 - 2^130 = h - p.
    let take_g = (carry & 1).wrapping_neg();
    for i in 0..5 {
        h[i] = (h[i] & !take_g) | (g[i] & take_g);
    }
    // Now h < p, but a limb may still hold a carry (h[1] can be 2^26): settle
    // them, so that the limbs below do not overlap.
    for i in 0..4 {
        h[i + 1] += h[i] >> 26;
        h[i] &= MASK;
    }
    // h mod 2^128, plus s.
    let h128 = [
        h[0] | (h[1] << 26),
        (h[1] >> 6) | (h[2] << 20),
        (h[2] >> 12) | (h[3] << 14),
        (h[3] >> 18) | (h[4] << 8),
    ];
    let mut out = [0u8; 16];
    let mut carry = 0u64;
    for i in 0..4 {
        let v = (h128[i] & 0xffff_ffff) + word(key, 16 + 4 * i) + carry;
        out[4 * i..4 * i + 4].copy_from_slice(&(v as u32).to_le_bytes());
        carry = v >> 32;
    }
    out
}

/// Whether two tags are equal, looking at every byte whatever the first difference.
pub fn tags_equal(a: &[u8; 16], b: &[u8; 16]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Bytes of hex text; any other character (`:`, spaces) is skipped.
    pub(crate) fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(char::is_ascii_hexdigit).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn matches_rfc_8439_2_5_2() {
        let key: [u8; 32] = hex(
            "85:d6:be:78:57:55:6d:33:7f:44:52:fe:42:d5:06:a8:01:03:80:8a:fb:0d:b2:fd:4a:bf:f6:af:41:49:f5:1b",
        )
        .try_into()
        .unwrap();
        let t = tag(&key, b"Cryptographic Forum Research Group");
        assert_eq!(
            t.to_vec(),
            hex("a8:06:1d:c1:30:51:36:c6:c2:2b:8b:af:0c:01:27:a9")
        );
    }

    /// Tags computed by an independent implementation (Python `cryptography`
    /// 48.0.0, `Poly1305.generate_tag`) for lengths around the block size,
    /// with keys that push every limb and carry to its edge.
    #[test]
    fn matches_an_independent_implementation_at_block_edges() {
        let keys = [
            "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "01000000000000000000000000000000ffffffffffffffffffffffffffffffff",
        ];
        let expected = [
            [
                "ffffffffffffffffffffffffffffffff",
                "23feffef23f8ffef23f8ffef23f8ffef",
                "fbff27e6030028e6030028e6030028ee",
                "fbffff17faffff17faffff17faffff17",
                "7cfe7ff768f81f2763f8bf565df85f86",
                "86fa6a437bf4ec24a274504dc37495bc",
                "900fe32bc15fa8d7bca8efe4c7e37eb1",
                "b99c030d7ce939bb6607393e68656f22",
            ],
            [
                "101112131415161718191a1b1c1d1e1f",
                "1f1215181b1e2124272a2d303336393c",
                "6a34c8de2e6f569b48017c6f929b4143",
                "c6da76552db5a3afe3e2631dc614c0d2",
                "7042707e815904f0bc94f916146622c1",
                "781abd5f310d88c0a5eb6994ca0daeac",
                "848218a8450ea6cad63584a381059d8a",
                "bdf333fac85d21975bf3be3e45b68e84",
            ],
            [
                "ffffffffffffffffffffffffffffffff",
                "00010000000000000000000000000000",
                "0e34597ea3c8ed12375c81a6cbf01501",
                "0f355a7fa4c9ee13385d82a7ccf1163b",
                "71375b80a5caef14395e83a8cdf2173c",
                "52de2671bb044f99e22c77c10a559ee8",
                "e475099e32c65aed8115aa3dd266f98d",
                "5552555984613e1dfbd8b69473502f0d",
            ],
        ];
        for (k, (key, tags)) in keys.iter().zip(expected).enumerate() {
            let key: [u8; 32] = hex(key).try_into().unwrap();
            for (n, want) in [0usize, 1, 15, 16, 17, 33, 64, 100].into_iter().zip(tags) {
                let msg: Vec<u8> = if k == 0 {
                    vec![0xff; n]
                } else {
                    (0..n).map(|i| ((i * 37 + n) & 0xff) as u8).collect()
                };
                assert_eq!(tag(&key, &msg).to_vec(), hex(want), "key {k}, {n} bytes");
            }
        }
    }

    #[test]
    fn tag_comparison_sees_any_byte() {
        let a = [7u8; 16];
        for i in 0..16 {
            let mut b = a;
            b[i] ^= 1;
            assert!(!tags_equal(&a, &b));
        }
        assert!(tags_equal(&a, &a));
    }
}
