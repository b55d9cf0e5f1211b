//! ChaCha20 as a keystream generator: the CSPRNG behind
//! [`crate::id_source::IdSource`].
//!
//! Written from RFC 8439 (sections 2.1–2.3) so that the cores need no
//! dependency beyond serde and thiserror; the RFC's own test vectors pin it
//! below. The block counter is 64 bits (words 12 and 13) and the nonce words
//! are zero: one key gives one stream of 2^70 bytes, far past any server's
//! life. The CSPRNG only expands a secret 256-bit key; [`xor_ietf`] is the
//! RFC's own layout (32-bit counter, 96-bit nonce) for [`crate::aead`].

/// "expand 32-byte k", the first row of every block.
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// A ChaCha20 keystream, read 32 bits at a time.
///
/// Only the position is kept (the block holding the next word, and how many
/// of its words were read), not the block itself: each draw computes the
/// blocks it reads. A server keeps one source per session endpoint, and ids
/// are drawn a few times in a session's life (its id, its namespace, a
/// fork), so 64 bytes of keystream held per session would cost more than
/// the block each draw recomputes (about 0.2 us); no unread keystream sits
/// in memory between draws either.
#[derive(Clone, PartialEq, Eq)]
pub struct ChaCha20 {
    key: [u32; 8],
    /// The block holding the next word.
    counter: u64,
    /// How many of its words were read already.
    used: usize,
}

/// Words in a block.
const BLOCK_WORDS: usize = 16;

impl ChaCha20 {
    /// The stream of `key` (little-endian words, as the RFC reads it),
    /// starting at block 0.
    pub fn new(key: [u8; 32]) -> Self {
        let mut words = [0u32; 8];
        for (word, bytes) in words.iter_mut().zip(key.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        ChaCha20 {
            key: words,
            counter: 0,
            used: 0,
        }
    }

    /// The next words of the stream, in order: each block they span is
    /// computed once.
    fn words(&mut self, out: &mut [u32]) {
        let mut filled = 0;
        while filled < out.len() {
            let b = block(
                &self.key,
                [self.counter as u32, (self.counter >> 32) as u32, 0, 0],
            );
            let take = (BLOCK_WORDS - self.used).min(out.len() - filled);
            out[filled..filled + take].copy_from_slice(&b[self.used..self.used + take]);
            filled += take;
            self.used += take;
            if self.used == BLOCK_WORDS {
                self.counter = self.counter.wrapping_add(1);
                self.used = 0;
            }
        }
    }

    /// The next 32 bits of the stream.
    pub fn next_u32(&mut self) -> u32 {
        let mut w = [0u32; 1];
        self.words(&mut w);
        w[0]
    }

    /// The next 64 bits: two words, the first one low.
    pub fn next_u64(&mut self) -> u64 {
        let mut w = [0u32; 2];
        self.words(&mut w);
        u64::from(w[0]) | (u64::from(w[1]) << 32)
    }

    /// Fills `out` from the stream (each word little-endian; a last partial
    /// word uses up the whole word).
    pub fn fill(&mut self, out: &mut [u8]) {
        let mut w = [0u32; BLOCK_WORDS];
        for chunk in out.chunks_mut(4 * BLOCK_WORDS) {
            let words = &mut w[..chunk.len().div_ceil(4)];
            self.words(words);
            for (bytes, word) in chunk.chunks_mut(4).zip(words.iter()) {
                bytes.copy_from_slice(&word.to_le_bytes()[..bytes.len()]);
            }
        }
    }
}

/// RFC 8439 2.4: XORs `data` with the keystream of `key` and the 96-bit
/// `nonce` (the IETF layout: a 32-bit block counter, from `counter`), as
/// ChaCha20-Poly1305 uses it ([`crate::aead`]).
pub fn xor_ietf(key: &[u8; 32], nonce: &[u8; 12], counter: u32, data: &mut [u8]) {
    let words = ChaCha20::new(*key).key;
    let n = |i: usize| u32::from_le_bytes([nonce[i], nonce[i + 1], nonce[i + 2], nonce[i + 3]]);
    for (i, chunk) in data.chunks_mut(64).enumerate() {
        let b = block(&words, [counter.wrapping_add(i as u32), n(0), n(4), n(8)]);
        for (byte, k) in chunk.iter_mut().zip(b.iter().flat_map(|w| w.to_le_bytes())) {
            *byte ^= k;
        }
    }
}

/// RFC 8439 2.1: the quarter round on four words of the state.
fn quarter_round(s: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    s[a] = s[a].wrapping_add(s[b]);
    s[d] = (s[d] ^ s[a]).rotate_left(16);
    s[c] = s[c].wrapping_add(s[d]);
    s[b] = (s[b] ^ s[c]).rotate_left(12);
    s[a] = s[a].wrapping_add(s[b]);
    s[d] = (s[d] ^ s[a]).rotate_left(8);
    s[c] = s[c].wrapping_add(s[d]);
    s[b] = (s[b] ^ s[c]).rotate_left(7);
}

/// RFC 8439 2.3: one 64-byte block for `key` and state words 12–15 (the
/// counter and nonce words), as sixteen words.
fn block(key: &[u32; 8], counter_and_nonce: [u32; 4]) -> [u32; 16] {
    let mut input = [0u32; 16];
    input[..4].copy_from_slice(&SIGMA);
    input[4..12].copy_from_slice(key);
    input[12..].copy_from_slice(&counter_and_nonce);
    let mut s = input;
    for _ in 0..10 {
        // A column round, then a diagonal round.
        quarter_round(&mut s, 0, 4, 8, 12);
        quarter_round(&mut s, 1, 5, 9, 13);
        quarter_round(&mut s, 2, 6, 10, 14);
        quarter_round(&mut s, 3, 7, 11, 15);
        quarter_round(&mut s, 0, 5, 10, 15);
        quarter_round(&mut s, 1, 6, 11, 12);
        quarter_round(&mut s, 2, 7, 8, 13);
        quarter_round(&mut s, 3, 4, 9, 14);
    }
    for (word, start) in s.iter_mut().zip(input) {
        *word = word.wrapping_add(start);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarter_round_matches_rfc_8439_2_1_1() {
        let mut s = [0u32; 16];
        s[..4].copy_from_slice(&[0x1111_1111, 0x0102_0304, 0x9b8d_6f43, 0x0123_4567]);
        quarter_round(&mut s, 0, 1, 2, 3);
        assert_eq!(s[..4], [0xea2a_92f4, 0xcb1c_f8ce, 0x4581_472e, 0x5881_c4bb]);
    }

    #[test]
    fn block_matches_rfc_8439_2_3_2() {
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let stream = ChaCha20::new(key);
        // Block count 1, nonce 00:00:00:09:00:00:00:4a:00:00:00:00.
        let out = block(&stream.key, [1, 0x0900_0000, 0x4a00_0000, 0]);
        assert_eq!(
            out,
            [
                0xe4e7_f110,
                0x1559_3bd1,
                0x1fdd_0f50,
                0xc471_20a3,
                0xc7f4_d1c7,
                0x0368_c033,
                0x9aaa_2204,
                0x4e6c_d4c3,
                0x4664_82d2,
                0x09aa_9f07,
                0x05d7_c214,
                0xa202_8bd9,
                0xd19c_12b5,
                0xb94e_16de,
                0xe883_d0cb,
                0x4e3c_50a2,
            ]
        );
    }

    #[test]
    fn keystream_of_the_zero_key_matches_rfc_8439_a_1() {
        // Test vector #1 of RFC 8439 A.1: all-zero key and nonce, block 0.
        let mut stream = ChaCha20::new([0; 32]);
        let mut first = [0u8; 16];
        stream.fill(&mut first);
        assert_eq!(
            first,
            [
                0x76, 0xb8, 0xe0, 0xad, 0xa0, 0xf1, 0x3d, 0x90, 0x40, 0x5d, 0x6a, 0xe5, 0x53, 0x86,
                0xbd, 0x28
            ]
        );
    }

    #[test]
    fn the_counter_carries_into_its_high_word() {
        let mut s = ChaCha20::new([3; 32]);
        s.counter = 1 << 32;
        let first = s.next_u32();
        assert_eq!(first, block(&s.key, [0, 1, 0, 0])[0]);
        assert_ne!(first, block(&s.key, [0, 0, 0, 0])[0]);
    }

    /// Draws of any size, across block boundaries, read the stream in
    /// order: the same words as the blocks themselves, one after another
    /// (a partial word of `fill` uses up its word).
    #[test]
    fn draws_of_mixed_sizes_read_the_blocks_in_order() {
        let key = [7u8; 32];
        let mut s = ChaCha20::new(key);
        let reference: Vec<u32> = (0..6u32)
            .flat_map(|n| block(&s.key, [n, 0, 0, 0]))
            .collect();
        let mut read = Vec::new();
        for round in 0..9 {
            read.push(s.next_u32());
            let v = s.next_u64();
            read.extend([v as u32, (v >> 32) as u32]);
            let mut bytes = vec![0u8; 4 * round + 3];
            s.fill(&mut bytes);
            for chunk in bytes.chunks(4) {
                let mut word = [0u8; 4];
                word[..chunk.len()].copy_from_slice(chunk);
                let expected = reference[read.len()].to_le_bytes();
                assert_eq!(chunk, &expected[..chunk.len()]);
                read.push(u32::from_le_bytes(word) | (reference[read.len()] & !mask(chunk.len())));
            }
        }
        assert!(read.len() > 3 * BLOCK_WORDS, "crosses several blocks");
        assert_eq!(read, reference[..read.len()]);
        let mut big = vec![0u8; 4 * BLOCK_WORDS + 8];
        ChaCha20::new(key).fill(&mut big);
        let words: Vec<u32> = big
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(
            words,
            reference[..BLOCK_WORDS + 2],
            "one fill across a boundary"
        );
    }

    /// The bits of a word that its first `n` little-endian bytes hold.
    fn mask(n: usize) -> u32 {
        if n >= 4 {
            u32::MAX
        } else {
            (1u32 << (8 * n)) - 1
        }
    }

    #[test]
    fn blocks_follow_on_and_streams_differ_by_key() {
        let mut a = ChaCha20::new([1; 32]);
        let first: Vec<u32> = (0..16).map(|_| a.next_u32()).collect();
        let second: Vec<u32> = (0..16).map(|_| a.next_u32()).collect();
        assert_ne!(first, second, "the counter moves between blocks");
        assert_eq!(second, block(&a.key, [1, 0, 0, 0]).to_vec());
        let mut b = ChaCha20::new([2; 32]);
        assert_ne!(first[0], b.next_u32());
        let mut c = ChaCha20::new([1; 32]);
        assert_eq!(
            u64::from(first[0]) | u64::from(first[1]) << 32,
            c.next_u64()
        );
    }
}
