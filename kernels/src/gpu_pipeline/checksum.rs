//! What a packet holds and how it is checked: its payload words, filled from the
//! sender's rank, the packet index and the iteration, and an 8-byte trailer holding the
//! salted checksum of the payload, computed on the device before the D2H copy and
//! recomputed on the device after the H2D copy.
//!
//! The salt is `packet_index + 1000 * tag`: a packet that lands in another packet's
//! buffer (two packets transposed, the MPI buffer aliasing bug) is checked with the
//! wrong salt and fails even when its bytes are intact.
//!
//! The checksum is a sum (wrapping) of one FNV-style multiply and xor-rotate mix per
//! word, of the word, its position and the salt, then a final mix: order-free, so a
//! device computes it in parallel, and position-dependent, so reordered words fail
//! too. These functions are the definition; the host backend runs them, and the cuda
//! backend's device code is generated from the same constants
//! (`super::cuda::device_source`).

/// Multiplier of the salt in a word's mix.
pub(crate) const K_SALT: u64 = 0x9E37_79B9_7F4A_7C15;
/// Multiplier of the position in a word's mix.
pub(crate) const K_POS: u64 = 0xC2B2_AE3D_27D4_EB4F;
/// The 64-bit FNV prime.
pub(crate) const FNV_PRIME: u64 = 0x0000_0100_0000_01B3;
/// The 64-bit FNV offset basis.
pub(crate) const FNV_OFFSET: u64 = 0xCBF2_9CE4_8422_2325;

/// A packet's salt: `packet_index + 1000 * tag`.
pub fn salt(packet: u32, tag: i32) -> u64 {
    u64::from(packet).wrapping_add(1000u64.wrapping_mul(tag as u64))
}

/// One word's term of the checksum.
#[inline]
pub fn mix(word: u64, position: u64, salt: u64) -> u64 {
    let x =
        (word ^ salt.wrapping_mul(K_SALT) ^ position.wrapping_mul(K_POS)).wrapping_mul(FNV_PRIME);
    x.rotate_left(31) ^ (x >> 29)
}

/// The checksum from the sum of the words' terms.
#[inline]
pub fn finish(sum: u64, salt: u64) -> u64 {
    let h = (sum ^ FNV_OFFSET ^ salt).wrapping_mul(FNV_PRIME);
    h ^ (h >> 32)
}

/// The salted checksum of `payload`.
pub fn checksum(payload: &[u64], salt: u64) -> u64 {
    let sum = payload.iter().enumerate().fold(0u64, |acc, (i, &w)| {
        acc.wrapping_add(mix(w, i as u64, salt))
    });
    finish(sum, salt)
}

/// SplitMix64's output function.
#[inline]
pub fn splitmix64(z: u64) -> u64 {
    let z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of the payload `rank` sends as `packet` in `iteration`.
#[inline]
pub fn fill_seed(rank: u32, packet: u32, iteration: u64) -> u64 {
    (u64::from(rank) << 40) ^ (u64::from(packet) << 24) ^ iteration.wrapping_mul(K_POS)
}

/// Word `i` of the payload with `seed`.
#[inline]
pub fn fill_word(seed: u64, i: u64) -> u64 {
    splitmix64(seed ^ i.wrapping_mul(K_SALT))
}

/// Splits a packet's words into its payload and its trailer.
pub fn split(packet: &[u64]) -> (&[u64], u64) {
    match packet.split_last() {
        Some((&trailer, payload)) => (payload, trailer),
        None => (&[], 0),
    }
}

/// Fills the payload of a packet (the "pack" kernel): every word but the trailer.
pub fn fill(packet: &mut [u64], seed: u64) {
    let n = packet.len().saturating_sub(1);
    for (i, w) in packet[..n].iter_mut().enumerate() {
        *w = fill_word(seed, i as u64);
    }
}

/// Writes the salted checksum of the payload into the trailer (the "checksum" kernel).
pub fn seal(packet: &mut [u64], salt: u64) {
    let (payload, _) = split(packet);
    let sum = checksum(payload, salt);
    if let Some(t) = packet.last_mut() {
        *t = sum;
    }
}

/// The "verify" kernel's result for a packet: 0 when the payload's checksum with
/// `salt` is the trailer, else the two xor'ed.
pub fn verify(packet: &[u64], salt: u64) -> u64 {
    let (payload, trailer) = split(packet);
    checksum(payload, salt) ^ trailer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(rank: u32, index: u32, tag: i32, words: usize) -> Vec<u64> {
        let mut p = vec![0; words];
        fill(&mut p, fill_seed(rank, index, 7));
        seal(&mut p, salt(index, tag));
        p
    }

    #[test]
    fn the_salt_is_the_packet_index_plus_1000_times_the_tag() {
        assert_eq!(salt(3, 503), 3 + 503_000);
        assert_eq!(salt(0, 0), 0);
    }

    #[test]
    fn a_sealed_packet_verifies_with_its_own_salt_only() {
        let p = packet(1, 2, 502, 64);
        assert_eq!(verify(&p, salt(2, 502)), 0);
        assert_ne!(verify(&p, salt(3, 503)), 0, "another packet's salt");
    }

    #[test]
    fn transposed_packets_fail_even_with_identical_payloads() {
        // Two packets carrying the same bytes: only the salt tells them apart.
        let seed = fill_seed(0, 0, 0);
        let mut a = vec![0; 32];
        let mut b = vec![0; 32];
        fill(&mut a, seed);
        fill(&mut b, seed);
        seal(&mut a, salt(0, 500));
        seal(&mut b, salt(1, 501));
        // Swapped: each lands in the other's buffer and is checked with that salt.
        assert_ne!(verify(&b, salt(0, 500)), 0);
        assert_ne!(verify(&a, salt(1, 501)), 0);
        assert_eq!(verify(&a, salt(0, 500)), 0);
    }

    #[test]
    fn a_flipped_bit_or_reordered_words_fail() {
        let s = salt(4, 504);
        let mut p = packet(2, 4, 504, 16);
        p[5] ^= 1 << 17;
        assert_ne!(verify(&p, s), 0);
        let mut q = packet(2, 4, 504, 16);
        q.swap(1, 2);
        assert_ne!(verify(&q, s), 0);
    }

    #[test]
    fn payloads_differ_by_rank_packet_and_iteration() {
        let w = |r, p, it| fill_word(fill_seed(r, p, it), 0);
        assert_ne!(w(0, 0, 0), w(1, 0, 0));
        assert_ne!(w(0, 0, 0), w(0, 1, 0));
        assert_ne!(w(0, 0, 0), w(0, 0, 1));
    }

    #[test]
    fn a_packet_of_only_a_trailer_checks_the_empty_payload() {
        let mut p = vec![0; 1];
        seal(&mut p, 9);
        assert_eq!(p[0], finish(0, 9));
        assert_eq!(verify(&p, 9), 0);
    }
}
