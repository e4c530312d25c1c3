//! A tiny MaxMind DB writer for GeoIP tests (no third-party database is committed): an IPv4
//! search tree with 24-bit records, a data section of `{"country":{"iso_code":…}}` maps, and
//! the metadata map, as the MaxMind DB format 2.0 specification lays them out.

/// Writes a database mapping each IPv4 network (`a.b.c.d`, prefix length) to a country code.
pub fn country_db(networks: &[([u8; 4], u8, &str)]) -> Vec<u8> {
    // Data section: one record per network.
    let mut data = Vec::new();
    let mut offsets = Vec::new();
    for (_, _, code) in networks {
        offsets.push(data.len() as u32);
        data.push(0xE1); // map, 1 entry
        string(&mut data, "country");
        data.push(0xE1);
        string(&mut data, "iso_code");
        string(&mut data, code);
    }
    // Search tree: nodes of [left, right]; `None` = no data yet, `Node(n)`, `Data(offset)`.
    #[derive(Clone, Copy)]
    enum Rec {
        Empty,
        Node(u32),
        Data(u32),
    }
    let mut nodes: Vec<[Rec; 2]> = vec![[Rec::Empty, Rec::Empty]];
    for ((ip, prefix, _), off) in networks.iter().zip(&offsets) {
        let bits = u32::from_be_bytes(*ip);
        let mut node = 0usize;
        for depth in 0..*prefix {
            let bit = ((bits >> (31 - depth)) & 1) as usize;
            if depth + 1 == *prefix {
                nodes[node][bit] = Rec::Data(*off);
            } else {
                node = match nodes[node][bit] {
                    Rec::Node(n) => n as usize,
                    _ => {
                        nodes.push([Rec::Empty, Rec::Empty]);
                        let n = nodes.len() - 1;
                        nodes[node][bit] = Rec::Node(n as u32);
                        n
                    }
                };
            }
        }
    }
    let count = nodes.len() as u32;
    let mut out = Vec::new();
    for n in &nodes {
        for r in n {
            let v = match *r {
                Rec::Empty => count,
                Rec::Node(i) => i,
                Rec::Data(off) => count + 16 + off,
            };
            out.extend_from_slice(&v.to_be_bytes()[1..]);
        }
    }
    out.extend_from_slice(&[0; 16]);
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\xAB\xCD\xEFMaxMind.com");
    out.push(0xE0 | 9); // metadata map, 9 entries
    string(&mut out, "node_count");
    out.push(0xC4); // uint32, 4 bytes
    out.extend_from_slice(&count.to_be_bytes());
    string(&mut out, "record_size");
    out.extend_from_slice(&[0xA1, 24]);
    string(&mut out, "ip_version");
    out.extend_from_slice(&[0xA1, 4]);
    string(&mut out, "database_type");
    string(&mut out, "GeoLite2-Country");
    string(&mut out, "languages");
    out.extend_from_slice(&[0x00, 0x04]); // array (extended type 11), 0 entries
    string(&mut out, "binary_format_major_version");
    out.extend_from_slice(&[0xA1, 2]);
    string(&mut out, "binary_format_minor_version");
    out.push(0xA0);
    string(&mut out, "build_epoch");
    out.extend_from_slice(&[0x04, 0x02]); // uint64 (extended type 9), 4 bytes
    out.extend_from_slice(&1_700_000_000u32.to_be_bytes());
    string(&mut out, "description");
    out.push(0xE0);
    out
}

fn string(out: &mut Vec<u8>, s: &str) {
    assert!(s.len() < 29);
    out.push(0x40 | s.len() as u8);
    out.extend_from_slice(s.as_bytes());
}
