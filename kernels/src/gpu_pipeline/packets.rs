//! Which packets a rank exchanges: the six faces of a 3-D halo on the periodic process
//! grid of `halo3d` (`crate::sync::{dims_3d, coords, rank_at}`), each face split into
//! `chunks` packets.
//!
//! Packet `index = direction * chunks + chunk`, `direction = 2 * dim + (0: down, 1:
//! up)` being the way it travels. A rank sends packet `index` to its neighbour in that
//! direction and receives packet `index` (travelling the same way) from its neighbour
//! on the other side, into its halo on that side; the tag is `TAG_BASE + index`, so
//! the two packets between ranks that are neighbours on both sides stay apart, and
//! both sides name a packet by the same index. On a grid dimension of 1 the neighbour
//! is the rank itself: such packets do not go through MPI but by a device-to-device
//! copy (the intranode path).
//!
//! In device and host memory a rank's send packets lie back to back in one buffer, as
//! do its receive packets: packet `index` at `index * packet_bytes`.

use crate::sync::{coords, dims_3d, rank_at};

/// Tag of packet 0.
pub const TAG_BASE: i32 = 500;

/// The smallest packet: one payload word and the trailer.
pub const MIN_PACKET_BYTES: usize = 16;

/// One packet of a rank's exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Its index, the same on both sides.
    pub index: u32,
    /// The direction it travels: `2 * dim + up`.
    pub direction: usize,
    /// Which part of its face.
    pub chunk: u32,
    /// The rank it is sent to.
    pub to: i32,
    /// The rank it is received from.
    pub from: i32,
    /// Its MPI tag.
    pub tag: i32,
}

impl Packet {
    /// Its checksum salt, `index + 1000 * tag`.
    pub fn salt(&self) -> u64 {
        super::checksum::salt(self.index, self.tag)
    }
}

/// A rank's packets and where they lie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// This rank.
    pub rank: i32,
    /// The grid of ranks.
    pub dims: [i32; 3],
    /// Bytes per packet, trailer included.
    pub packet_bytes: usize,
    /// Every packet, by index.
    pub packets: Vec<Packet>,
}

/// Why a packet size cannot be used, naming the option.
pub fn check_packet_bytes(bytes: usize) -> Result<(), String> {
    if bytes < MIN_PACKET_BYTES || !bytes.is_multiple_of(8) {
        return Err(format!(
            "--packet-bytes: {bytes} is not a multiple of 8 bytes of at least \
             {MIN_PACKET_BYTES} (a payload word and the checksum trailer)"
        ));
    }
    if i32::try_from(bytes).is_err() {
        return Err(format!(
            "--packet-bytes: {bytes} is more than MPI's count allows"
        ));
    }
    Ok(())
}

impl Layout {
    /// `rank`'s packets on the grid of `ranks`, each face in `chunks` packets.
    pub fn new(rank: i32, ranks: i32, chunks: u32, packet_bytes: usize) -> Layout {
        Layout::with_dims(rank, dims_3d(ranks), chunks, packet_bytes)
    }

    /// As [`Layout::new`], on the grid `dims`.
    pub fn with_dims(rank: i32, dims: [i32; 3], chunks: u32, packet_bytes: usize) -> Layout {
        let at = coords(rank, dims);
        let neighbour = |direction: usize| {
            let mut c = at;
            c[direction / 2] += if direction % 2 == 1 { 1 } else { -1 };
            rank_at(c, dims)
        };
        let mut packets = Vec::with_capacity(6 * chunks as usize);
        for direction in 0..6 {
            for chunk in 0..chunks {
                let index = direction as u32 * chunks + chunk;
                packets.push(Packet {
                    index,
                    direction,
                    chunk,
                    to: neighbour(direction),
                    from: neighbour(direction ^ 1),
                    tag: TAG_BASE + index as i32,
                });
            }
        }
        Layout {
            rank,
            dims,
            packet_bytes,
            packets,
        }
    }

    /// Offset of packet `index` in the send and receive buffers.
    pub fn offset(&self, index: u32) -> usize {
        index as usize * self.packet_bytes
    }

    /// Bytes of all packets together (each of the send and receive buffers).
    pub fn total_bytes(&self) -> usize {
        self.packets.len() * self.packet_bytes
    }

    /// Words per packet, trailer included.
    pub fn words(&self) -> usize {
        self.packet_bytes / 8
    }

    /// True when `p` stays on this rank (its neighbour is the rank itself).
    pub fn is_local(&self, p: &Packet) -> bool {
        p.to == self.rank
    }

    /// The packets that go through MPI.
    pub fn remote(&self) -> impl Iterator<Item = &Packet> {
        self.packets.iter().filter(|p| !self.is_local(p))
    }

    /// The packets copied on the device.
    pub fn local(&self) -> impl Iterator<Item = &Packet> {
        self.packets.iter().filter(|p| self.is_local(p))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_packet_sent_is_received_under_the_same_index_and_tag() {
        let dims = [2, 2, 1];
        let layouts: Vec<Layout> = (0..4).map(|r| Layout::with_dims(r, dims, 2, 64)).collect();
        for l in &layouts {
            assert_eq!(l.packets.len(), 12);
            for p in &l.packets {
                assert_eq!(p.index, p.direction as u32 * 2 + p.chunk);
                assert_eq!(p.tag, TAG_BASE + p.index as i32);
                // The receiver expects this very packet from this rank.
                let peer = &layouts[p.to as usize].packets[p.index as usize];
                assert_eq!(peer.from, l.rank, "{p:?}");
                assert_eq!((peer.tag, peer.direction), (p.tag, p.direction));
            }
        }
    }

    #[test]
    fn a_dimension_of_one_keeps_its_packets_on_the_rank() {
        let l = Layout::with_dims(1, [2, 1, 1], 1, 64);
        let local: Vec<u32> = l.local().map(|p| p.index).collect();
        assert_eq!(local, [2, 3, 4, 5], "y and z wrap onto the rank itself");
        let remote: Vec<(u32, i32, i32)> = l.remote().map(|p| (p.index, p.to, p.from)).collect();
        assert_eq!(
            remote,
            [(0, 0, 0), (1, 0, 0)],
            "both x packets to and from rank 0"
        );
    }

    #[test]
    fn packets_lie_back_to_back() {
        let l = Layout::with_dims(0, [1, 1, 1], 3, 4096);
        assert_eq!(l.offset(5), 5 * 4096);
        assert_eq!(l.total_bytes(), 18 * 4096);
        assert_eq!(l.words(), 512);
    }

    #[test]
    fn packet_sizes_are_checked() {
        assert!(check_packet_bytes(16).is_ok());
        assert!(check_packet_bytes(12)
            .unwrap_err()
            .contains("--packet-bytes: 12"));
        assert!(check_packet_bytes(8).is_err());
        assert!(check_packet_bytes(1 << 31).is_err());
    }
}
