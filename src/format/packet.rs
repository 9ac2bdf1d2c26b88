//! Morloc packets: the framing spoken on pool sockets.
//!
//! Every message is a 32-byte header (magic, command, metadata length,
//! payload length), a metadata block and a payload. We build three kinds:
//! the PING readiness probe, DATA packets carrying one argument as a flat
//! voidstar blob, and the CALL packet that bundles a manifold id with its
//! argument packets. We parse one kind: the pool's reply to a call, which is
//! either a failure message or a value in one of several forms. The value
//! forms are returned unresolved in a [`Reply`]; reading shared memory or a
//! result file is the caller's business.
//!
//! Architecture Invariant: pure; no I/O.

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// `0x0707F86D`, bytes `6d f8 07 07` on the wire.
pub const MAGIC: u32 = 0x0707_F86D;
pub const HEADER_LEN: usize = 32;

/// Command types (header byte 12).
pub const CMD_DATA: u8 = 0;
pub const CMD_CALL: u8 = 1;
pub const CMD_PING: u8 = 2;

/// CALL entrypoints (header byte 13 of a CALL).
pub const ENTRYPOINT_LOCAL: u8 = 0;

/// DATA sources (header byte 13 of a DATA packet).
pub const SOURCE_MESG: u8 = 0;
pub const SOURCE_FILE: u8 = 1;
pub const SOURCE_RPTR: u8 = 2;

/// DATA formats (header byte 14).
pub const FORMAT_JSON: u8 = 0;
pub const FORMAT_MSGPACK: u8 = 1;
pub const FORMAT_TEXT: u8 = 2;
pub const FORMAT_DATA: u8 = 3;
pub const FORMAT_VOIDSTAR: u8 = 4;
pub const FORMAT_ARROW: u8 = 5;

/// Compression (header byte 15): only NONE is supported.
pub const COMPRESSION_NONE: u8 = 0;
pub const COMPRESSION_ZSTD: u8 = 1;

/// Status (header byte 17).
pub const STATUS_PASS: u8 = 0;
pub const STATUS_FAIL: u8 = 1;

/// Metadata entry magic and the SCHEMA_STRING entry type.
pub const METADATA_MAGIC: &[u8; 3] = b"mmh";
pub const METADATA_SCHEMA_STRING: u8 = 1;

/// Writers pad the metadata block to a multiple of this.
pub const METADATA_ALIGN: usize = 32;

/// The most bytes of a FILE payload that are read as the path (reference
/// behaviour).
pub const MAX_PATH_LEN: usize = 4096;

/// The 32-byte packet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub magic: u32,
    /// `plain`, `version`, `flavor`, `mode`: written as 0, ignored on read.
    pub plain: u16,
    pub version: u16,
    pub flavor: u16,
    pub mode: u16,
    /// The 8-byte command union; byte 0 is the command type.
    pub command: [u8; 8],
    /// Metadata bytes between the header and the payload.
    pub offset: u32,
    /// Payload bytes.
    pub length: u64,
}

impl Header {
    /// A header with zeroed reserved fields.
    pub fn new(command: [u8; 8], offset: u32, length: u64) -> Header {
        Header {
            magic: MAGIC,
            plain: 0,
            version: 0,
            flavor: 0,
            mode: 0,
            command,
            offset,
            length,
        }
    }

    /// Reads a header; only the magic is validated.
    pub fn parse(bytes: &[u8; HEADER_LEN]) -> Result<Header, PacketError> {
        let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
        let magic = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if magic != MAGIC {
            return Err(PacketError::new(PacketErrorKind::BadMagic(magic)));
        }
        let mut command = [0u8; 8];
        command.copy_from_slice(&bytes[12..20]);
        let mut length = [0u8; 8];
        length.copy_from_slice(&bytes[24..32]);
        Ok(Header {
            magic,
            plain: u16_at(4),
            version: u16_at(6),
            flavor: u16_at(8),
            mode: u16_at(10),
            command,
            offset: u32::from_le_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]),
            length: u64::from_le_bytes(length),
        })
    }

    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..4].copy_from_slice(&self.magic.to_le_bytes());
        out[4..6].copy_from_slice(&self.plain.to_le_bytes());
        out[6..8].copy_from_slice(&self.version.to_le_bytes());
        out[8..10].copy_from_slice(&self.flavor.to_le_bytes());
        out[10..12].copy_from_slice(&self.mode.to_le_bytes());
        out[12..20].copy_from_slice(&self.command);
        out[20..24].copy_from_slice(&self.offset.to_le_bytes());
        out[24..32].copy_from_slice(&self.length.to_le_bytes());
        out
    }

    pub fn command_type(&self) -> u8 {
        self.command[0]
    }

    /// Total packet size: header, metadata and payload.
    pub fn packet_len(&self) -> Result<u64, PacketError> {
        (HEADER_LEN as u64)
            .checked_add(u64::from(self.offset))
            .and_then(|n| n.checked_add(self.length))
            .ok_or(PacketError::new(PacketErrorKind::TooLarge(self.length)))
    }
}

/// A packet split into its parts (any command type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    pub header: Header,
    pub metadata: &'a [u8],
    pub payload: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Splits the packet at the start of `bytes`; bytes after it are ignored.
    pub fn parse(bytes: &'a [u8]) -> Result<Packet<'a>, PacketError> {
        let Some(head) = bytes.first_chunk::<HEADER_LEN>() else {
            return Err(PacketError::new(PacketErrorKind::Truncated {
                needed: HEADER_LEN as u64,
                got: bytes.len(),
            }));
        };
        let header = Header::parse(head)?;
        let total = header.packet_len()?;
        if (bytes.len() as u64) < total {
            return Err(PacketError::new(PacketErrorKind::Truncated {
                needed: total,
                got: bytes.len(),
            }));
        }
        // total <= bytes.len(), so these fit in usize.
        let meta_end = HEADER_LEN + header.offset as usize;
        Ok(Packet {
            header,
            metadata: &bytes[HEADER_LEN..meta_end],
            payload: &bytes[meta_end..total as usize],
        })
    }

    /// The SCHEMA_STRING metadata entry, without its NUL, if present and UTF-8.
    pub fn schema(&self) -> Option<&'a str> {
        metadata_entries(self.metadata)
            .find(|(kind, _)| *kind == METADATA_SCHEMA_STRING)
            .and_then(|(_, body)| std::str::from_utf8(body.strip_suffix(&[0]).unwrap_or(body)).ok())
    }
}

/// Walks metadata entries (`mmh`, type, u32 size, body) until fewer than 8
/// bytes remain, the magic is missing (padding starts) or a body runs past
/// the block.
pub fn metadata_entries(mut block: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    std::iter::from_fn(move || {
        if block.len() < 8 || &block[..3] != METADATA_MAGIC {
            return None;
        }
        let kind = block[3];
        let size = u32::from_le_bytes([block[4], block[5], block[6], block[7]]) as usize;
        let body = block.get(8..8usize.checked_add(size)?)?;
        block = &block[8 + size..];
        Some((kind, body))
    })
}

/// A pool's answer to a call, with the value not yet resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply<'a> {
    /// MESG + VOIDSTAR: a flat blob (see `voidstar::decode_flat`).
    Voidstar(&'a [u8]),
    /// RPTR + VOIDSTAR: a relptr to the value's head in shared memory.
    Rptr(i64),
    /// FILE + MSGPACK: the path of a file holding the raw msgpack value.
    File(PathBuf),
    /// MESG + MSGPACK: the msgpack value itself (Julia pools).
    Msgpack(&'a [u8]),
    /// A FAIL packet: the pool's error message, verbatim.
    Fail(String),
}

/// Parses a pool's reply to a CALL.
pub fn parse_reply(bytes: &[u8]) -> Result<Reply<'_>, PacketError> {
    let packet = Packet::parse(bytes)?;
    let cmd = packet.header.command;
    if cmd[0] != CMD_DATA {
        return Err(PacketError::new(PacketErrorKind::NotData(cmd[0])));
    }
    let (source, format, compression, encryption, status) =
        (cmd[1], cmd[2], cmd[3], cmd[4], cmd[5]);
    // A failure is recognised by its status alone, before anything else.
    if status == STATUS_FAIL {
        return Ok(Reply::Fail(
            String::from_utf8_lossy(packet.payload).into_owned(),
        ));
    }
    if compression != COMPRESSION_NONE {
        return Err(PacketError::new(PacketErrorKind::Compressed(compression)));
    }
    if encryption != 0 {
        return Err(PacketError::new(PacketErrorKind::Encrypted(encryption)));
    }
    match (source, format) {
        (SOURCE_MESG, FORMAT_VOIDSTAR) => Ok(Reply::Voidstar(packet.payload)),
        (SOURCE_MESG, FORMAT_MSGPACK) => Ok(Reply::Msgpack(packet.payload)),
        (SOURCE_RPTR, FORMAT_VOIDSTAR) => {
            let Ok(word) = <[u8; 8]>::try_from(packet.payload) else {
                return Err(PacketError::new(PacketErrorKind::RptrSize(
                    packet.payload.len(),
                )));
            };
            let relptr = i64::from_le_bytes(word);
            if relptr < 0 {
                return Err(PacketError::new(PacketErrorKind::NullRptr(relptr)));
            }
            Ok(Reply::Rptr(relptr))
        }
        (SOURCE_FILE, FORMAT_MSGPACK) => {
            let path = &packet.payload[..packet.payload.len().min(MAX_PATH_LEN)];
            let end = path.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
            let path = &path[..end];
            if path.is_empty() {
                return Err(PacketError::new(PacketErrorKind::EmptyPath));
            }
            Ok(Reply::File(PathBuf::from(OsStr::from_bytes(path))))
        }
        _ => Err(PacketError::new(PacketErrorKind::Unsupported {
            source,
            format,
        })),
    }
}

/// The PING packet; a live pool echoes it byte for byte.
pub fn ping() -> [u8; HEADER_LEN] {
    Header::new([CMD_PING, 0, 0, 0, 0, 0, 0, 0], 0, 0).to_bytes()
}

/// True when `bytes` is exactly the echo of [`ping`].
pub fn is_pong(bytes: &[u8]) -> bool {
    bytes == ping()
}

/// Validates the magic of a header and returns the full packet length, so
/// the reader knows how many bytes to wait for.
pub fn packet_len(header: &[u8; HEADER_LEN]) -> Result<u64, PacketError> {
    Header::parse(header)?.packet_len()
}

/// A DATA packet (PASS, uncompressed) with one SCHEMA_STRING metadata entry
/// padded to 32 bytes. `schema_wire` must be hint-free
/// (`Schema::to_wire_string`).
pub fn data_packet(source: u8, format: u8, schema_wire: &str, payload: &[u8]) -> Vec<u8> {
    let body_len = schema_wire.len() + 1;
    let meta_len = (8 + body_len).div_ceil(METADATA_ALIGN) * METADATA_ALIGN;
    let command = [
        CMD_DATA,
        source,
        format,
        COMPRESSION_NONE,
        0,
        STATUS_PASS,
        0,
        0,
    ];
    let header = Header::new(command, meta_len as u32, payload.len() as u64);
    let mut out = Vec::with_capacity(HEADER_LEN + meta_len + payload.len());
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(METADATA_MAGIC);
    out.push(METADATA_SCHEMA_STRING);
    out.extend_from_slice(&(body_len as u32).to_le_bytes());
    out.extend_from_slice(schema_wire.as_bytes());
    out.resize(HEADER_LEN + meta_len, 0);
    out.extend_from_slice(payload);
    out
}

/// A MESG + VOIDSTAR argument packet carrying a flat blob.
pub fn data_packet_voidstar(schema_wire: &str, blob: &[u8]) -> Vec<u8> {
    data_packet(SOURCE_MESG, FORMAT_VOIDSTAR, schema_wire, blob)
}

/// The metadata block of a data packet naming `schema_wire`: its length.
fn schema_meta_len(schema_wire: &str) -> usize {
    (8 + schema_wire.len() + 1).div_ceil(METADATA_ALIGN) * METADATA_ALIGN
}

/// The length of a MESG + VOIDSTAR argument packet carrying `blob_len`
/// payload bytes (what [`data_packet_voidstar`] returns).
pub fn data_packet_len(schema_wire: &str, blob_len: usize) -> usize {
    HEADER_LEN + schema_meta_len(schema_wire) + blob_len
}

/// Appends the header and metadata of a MESG + VOIDSTAR argument packet to
/// `out`; the caller appends the payload, then calls [`end_data_packet`].
/// Returns where the packet starts.
pub fn begin_data_packet(out: &mut Vec<u8>, schema_wire: &str) -> usize {
    let start = out.len();
    let meta_len = schema_meta_len(schema_wire);
    out.extend_from_slice(&[0; HEADER_LEN]);
    out.extend_from_slice(METADATA_MAGIC);
    out.push(METADATA_SCHEMA_STRING);
    out.extend_from_slice(&((schema_wire.len() + 1) as u32).to_le_bytes());
    out.extend_from_slice(schema_wire.as_bytes());
    out.resize(start + HEADER_LEN + meta_len, 0);
    start
}

/// Writes the header of the argument packet begun at `start`, whose payload
/// is everything appended since: the bytes of [`data_packet_voidstar`].
pub fn end_data_packet(out: &mut [u8], start: usize, schema_wire: &str) {
    let meta_len = schema_meta_len(schema_wire);
    let payload = out.len() - start - HEADER_LEN - meta_len;
    let command = [
        CMD_DATA,
        SOURCE_MESG,
        FORMAT_VOIDSTAR,
        COMPRESSION_NONE,
        0,
        STATUS_PASS,
        0,
        0,
    ];
    let header = Header::new(command, meta_len as u32, payload as u64);
    out[start..start + HEADER_LEN].copy_from_slice(&header.to_bytes());
}

/// Appends a placeholder CALL header to `out`; the argument packets follow,
/// then [`end_call_packet`]. Returns where the packet starts.
pub fn begin_call_packet(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    start
}

/// Writes the header of the CALL packet begun at `start` for manifold
/// `midx`: the bytes of [`call_packet`] with the arguments appended since.
pub fn end_call_packet(out: &mut [u8], start: usize, midx: u32) {
    let length = out.len() - start - HEADER_LEN;
    let mut command = [CMD_CALL, ENTRYPOINT_LOCAL, 0, 0, 0, 0, 0, 0];
    command[4..8].copy_from_slice(&midx.to_le_bytes());
    let header = Header::new(command, 0, length as u64);
    out[start..start + HEADER_LEN].copy_from_slice(&header.to_bytes());
}

/// A FAIL packet carrying `message` (what a pool sends on error).
pub fn fail_packet(message: &str) -> Vec<u8> {
    let command = [
        CMD_DATA,
        SOURCE_MESG,
        FORMAT_TEXT,
        COMPRESSION_NONE,
        0,
        STATUS_FAIL,
        0,
        0,
    ];
    let mut out = Header::new(command, 0, message.len() as u64)
        .to_bytes()
        .to_vec();
    out.extend_from_slice(message.as_bytes());
    out
}

/// A CALL packet: manifold `midx`, LOCAL entrypoint, followed by the
/// argument packets in order.
pub fn call_packet(midx: u32, args: &[Vec<u8>]) -> Vec<u8> {
    let length: usize = args.iter().map(Vec::len).sum();
    let mut command = [CMD_CALL, ENTRYPOINT_LOCAL, 0, 0, 0, 0, 0, 0];
    command[4..8].copy_from_slice(&midx.to_le_bytes());
    let mut out = Vec::with_capacity(HEADER_LEN + length);
    out.extend_from_slice(&Header::new(command, 0, length as u64).to_bytes());
    for arg in args {
        out.extend_from_slice(arg);
    }
    out
}

/// A parsed CALL packet (what a pool receives; used by test pools).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call<'a> {
    pub midx: u32,
    pub args: Vec<Packet<'a>>,
}

/// Parses a CALL packet and splits its payload into argument packets.
pub fn parse_call(bytes: &[u8]) -> Result<Call<'_>, PacketError> {
    let packet = Packet::parse(bytes)?;
    let cmd = packet.header.command;
    if cmd[0] != CMD_CALL {
        return Err(PacketError::new(PacketErrorKind::NotCall(cmd[0])));
    }
    let midx = u32::from_le_bytes([cmd[4], cmd[5], cmd[6], cmd[7]]);
    let mut rest = packet.payload;
    let mut args = Vec::new();
    while !rest.is_empty() {
        let arg = Packet::parse(rest)?;
        // packet_len fits: Packet::parse checked it against rest.len().
        let len = arg.header.packet_len()? as usize;
        args.push(arg);
        rest = &rest[len..];
    }
    Ok(Call { midx, args })
}

/// A packet that cannot be used. Displays as an error message for the
/// tool caller: `malformed reply from pool: ...` or
/// `unsupported reply from pool: ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketError {
    pub kind: PacketErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PacketErrorKind {
    BadMagic(u32),
    Truncated {
        needed: u64,
        got: usize,
    },
    /// Header lengths that overflow a 64-bit size.
    TooLarge(u64),
    NotData(u8),
    NotCall(u8),
    RptrSize(usize),
    NullRptr(i64),
    EmptyPath,
    Compressed(u8),
    Encrypted(u8),
    Unsupported {
        source: u8,
        format: u8,
    },
}

impl PacketError {
    pub fn new(kind: PacketErrorKind) -> PacketError {
        PacketError { kind }
    }
}

fn source_name(source: u8) -> String {
    match source {
        SOURCE_MESG => "MESG".into(),
        SOURCE_FILE => "FILE".into(),
        SOURCE_RPTR => "RPTR".into(),
        other => format!("source {other}"),
    }
}

fn format_name(format: u8) -> String {
    match format {
        FORMAT_JSON => "JSON".into(),
        FORMAT_MSGPACK => "MSGPACK".into(),
        FORMAT_TEXT => "TEXT".into(),
        FORMAT_DATA => "DATA".into(),
        FORMAT_VOIDSTAR => "VOIDSTAR".into(),
        FORMAT_ARROW => "ARROW".into(),
        other => format!("format {other}"),
    }
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PacketErrorKind::*;
        match &self.kind {
            BadMagic(m) => write!(f, "malformed reply from pool: bad magic 0x{m:08x}"),
            Truncated { needed, got } => {
                write!(
                    f,
                    "malformed reply from pool: packet needs {needed} bytes, got {got}"
                )
            }
            TooLarge(n) => write!(
                f,
                "malformed reply from pool: payload length {n} is too large"
            ),
            NotData(t) => write!(
                f,
                "malformed reply from pool: expected a data packet, got command type {t}"
            ),
            NotCall(t) => write!(
                f,
                "malformed packet: expected a call packet, got command type {t}"
            ),
            RptrSize(n) => write!(
                f,
                "malformed reply from pool: shared-memory pointer has {n} bytes, expected 8"
            ),
            NullRptr(p) => write!(
                f,
                "malformed reply from pool: null shared-memory pointer 0x{:016x}",
                *p as u64
            ),
            EmptyPath => f.write_str("malformed reply from pool: file reply names no path"),
            Compressed(c) if *c == COMPRESSION_ZSTD => {
                f.write_str("unsupported reply from pool: zstd-compressed data")
            }
            Compressed(c) => write!(f, "unsupported reply from pool: compression {c}"),
            Encrypted(e) => write!(f, "unsupported reply from pool: encryption {e}"),
            Unsupported { source, format } if *format == FORMAT_ARROW => write!(
                f,
                "unsupported reply from pool: {} ARROW (tables cannot be returned as JSON)",
                source_name(*source)
            ),
            Unsupported { source, format } => {
                write!(
                    f,
                    "unsupported reply from pool: {} {}",
                    source_name(*source),
                    format_name(*format)
                )
            }
        }
    }
}

impl std::error::Error for PacketError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        let clean: String = text.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..clean.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&clean[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn spec_byte_examples() {
        // pool-protocol §6.3
        assert_eq!(
            ping().to_vec(),
            hex("6d f8 07 07 00 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00")
        );
        let arg = data_packet(SOURCE_MESG, FORMAT_MSGPACK, "i4", &[0x2a]);
        let mut expected =
            hex("6d f8 07 07 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 00 20 00 00 00 01 00 00 00 00 00 00 00");
        expected.extend(hex("6d 6d 68 01 03 00 00 00 69 34 00"));
        expected.resize(64, 0);
        expected.push(0x2a);
        assert_eq!(arg, expected);
        let call = call_packet(7, std::slice::from_ref(&arg));
        let mut expected =
            hex("6d f8 07 07 00 00 00 00 00 00 00 00 01 00 00 00 07 00 00 00 00 00 00 00 41 00 00 00 00 00 00 00");
        expected.extend(&arg);
        assert_eq!(call, expected);
        let fail = fail_packet("boom");
        assert_eq!(
            fail,
            hex("6d f8 07 07 00 00 00 00 00 00 00 00 00 00 02 00 00 01 00 00 00 00 00 00 04 00 00 00 00 00 00 00 62 6f 6f 6d")
        );
        assert_eq!(parse_reply(&fail), Ok(Reply::Fail("boom".into())));
        assert!(is_pong(&ping()));
        assert!(!is_pong(&ping()[..31]));
        assert_eq!(call_packet(3, &[]).len(), 32);
    }

    #[test]
    fn metadata_pads_to_32() {
        let schema = "m36tmpDirsanumThreadsjcremoveCachesb";
        let p = data_packet_voidstar(schema, &[1, 2, 3]);
        assert_eq!(p.len(), 32 + 64 + 3);
        let packet = Packet::parse(&p).unwrap();
        assert_eq!(packet.header.offset, 64);
        assert_eq!(packet.schema(), Some(schema));
        assert_eq!(packet.payload, &[1, 2, 3]);
        // 23 characters + NUL + 8 = 32: no extra padding block.
        assert_eq!(data_packet_voidstar(&"x".repeat(23), &[]).len(), 64);
        assert_eq!(data_packet_voidstar(&"x".repeat(24), &[]).len(), 96);
    }

    #[test]
    fn call_packets_split_into_arguments() {
        let a = data_packet_voidstar("j", &[1; 16]);
        let b = data_packet_voidstar("s", &[2; 21]);
        let call = call_packet(12, &[a.clone(), b.clone()]);
        let parsed = parse_call(&call).unwrap();
        assert_eq!(parsed.midx, 12);
        assert_eq!(parsed.args.len(), 2);
        assert_eq!(parsed.args[1].payload, &[2; 21]);
        assert_eq!(parsed.args[1].schema(), Some("s"));
        assert_eq!(
            parse_call(&a).unwrap_err().to_string(),
            "malformed packet: expected a call packet, got command type 0"
        );
    }

    fn reply(command: [u8; 8], payload: &[u8]) -> Vec<u8> {
        let mut out = Header::new(command, 0, payload.len() as u64)
            .to_bytes()
            .to_vec();
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn replies_of_every_kind() {
        let blob = data_packet_voidstar("j", &[7; 16]);
        assert_eq!(parse_reply(&blob), Ok(Reply::Voidstar(&[7; 16][..])));
        let rptr = data_packet(
            SOURCE_RPTR,
            FORMAT_VOIDSTAR,
            "aj",
            &0x06dd_0000_0000_0010i64.to_le_bytes(),
        );
        assert_eq!(parse_reply(&rptr), Ok(Reply::Rptr(0x06dd_0000_0000_0010)));
        let file = data_packet(SOURCE_FILE, FORMAT_MSGPACK, "aj", b"/tmp/x.mpk\0\0");
        assert_eq!(
            parse_reply(&file),
            Ok(Reply::File(PathBuf::from("/tmp/x.mpk")))
        );
        let mpk = data_packet(SOURCE_MESG, FORMAT_MSGPACK, "j", &[5]);
        assert_eq!(parse_reply(&mpk), Ok(Reply::Msgpack(&[5][..])));
        // FAIL wins over any source/format/compression bytes.
        let fail = reply(
            [
                CMD_DATA,
                SOURCE_RPTR,
                FORMAT_ARROW,
                COMPRESSION_ZSTD,
                0,
                STATUS_FAIL,
                0,
                0,
            ],
            b"bad \xff",
        );
        assert_eq!(parse_reply(&fail), Ok(Reply::Fail("bad \u{fffd}".into())));
        // Trailing bytes after the packet are not part of it.
        let mut longer = blob.clone();
        longer.extend_from_slice(&[9; 5]);
        assert_eq!(parse_reply(&longer), Ok(Reply::Voidstar(&[7; 16][..])));
        // A long FILE payload is cut at 4096 bytes.
        let long_path = vec![b'a'; 5000];
        let file = data_packet(SOURCE_FILE, FORMAT_MSGPACK, "aj", &long_path);
        let Ok(Reply::File(p)) = parse_reply(&file) else {
            panic!()
        };
        assert_eq!(p.as_os_str().len(), MAX_PATH_LEN);
    }

    #[track_caller]
    fn check_err(bytes: &[u8], msg: &str) {
        match parse_reply(bytes) {
            Ok(r) => panic!("parsed {r:?}"),
            Err(e) => assert_eq!(e.to_string(), msg),
        }
    }

    #[test]
    fn bad_replies_have_clear_messages() {
        let mut bad = ping();
        bad[0] = 0x6e;
        check_err(&bad, "malformed reply from pool: bad magic 0x0707f86e");
        check_err(
            &ping()[..10],
            "malformed reply from pool: packet needs 32 bytes, got 10",
        );
        let blob = data_packet_voidstar("j", &[7; 16]);
        check_err(
            &blob[..70],
            "malformed reply from pool: packet needs 80 bytes, got 70",
        );
        check_err(
            &ping(),
            "malformed reply from pool: expected a data packet, got command type 2",
        );
        let mut huge = Header::new([0; 8], u32::MAX, u64::MAX).to_bytes();
        check_err(
            &huge,
            "malformed reply from pool: payload length 18446744073709551615 is too large",
        );
        assert!(packet_len(&huge).is_err());
        huge[24..32].copy_from_slice(&100u64.to_le_bytes());
        assert_eq!(packet_len(&huge), Ok(32 + u64::from(u32::MAX) + 100));
        check_err(
            &reply(
                [
                    CMD_DATA,
                    SOURCE_MESG,
                    FORMAT_VOIDSTAR,
                    COMPRESSION_ZSTD,
                    0,
                    0,
                    0,
                    0,
                ],
                &[1],
            ),
            "unsupported reply from pool: zstd-compressed data",
        );
        check_err(
            &reply(
                [CMD_DATA, SOURCE_MESG, FORMAT_VOIDSTAR, 0, 1, 0, 0, 0],
                &[1],
            ),
            "unsupported reply from pool: encryption 1",
        );
        check_err(
            &reply(
                [CMD_DATA, SOURCE_RPTR, FORMAT_ARROW, 0, 0, 0, 0, 0],
                &[0; 8],
            ),
            "unsupported reply from pool: RPTR ARROW (tables cannot be returned as JSON)",
        );
        check_err(
            &reply([CMD_DATA, SOURCE_MESG, FORMAT_JSON, 0, 0, 0, 0, 0], b"1"),
            "unsupported reply from pool: MESG JSON",
        );
        check_err(
            &reply([CMD_DATA, SOURCE_FILE, FORMAT_DATA, 0, 0, 0, 0, 0], b"/x"),
            "unsupported reply from pool: FILE DATA",
        );
        check_err(
            &reply([CMD_DATA, 9, 9, 0, 0, 0, 0, 0], b""),
            "unsupported reply from pool: source 9 format 9",
        );
        check_err(
            &reply(
                [CMD_DATA, SOURCE_RPTR, FORMAT_VOIDSTAR, 0, 0, 0, 0, 0],
                &[0; 4],
            ),
            "malformed reply from pool: shared-memory pointer has 4 bytes, expected 8",
        );
        check_err(
            &reply(
                [CMD_DATA, SOURCE_RPTR, FORMAT_VOIDSTAR, 0, 0, 0, 0, 0],
                &[0xff; 8],
            ),
            "malformed reply from pool: null shared-memory pointer 0xffffffffffffffff",
        );
        check_err(
            &reply(
                [CMD_DATA, SOURCE_FILE, FORMAT_MSGPACK, 0, 0, 0, 0, 0],
                &[0; 3],
            ),
            "malformed reply from pool: file reply names no path",
        );
    }

    #[test]
    fn metadata_walk_stops_at_padding_and_overruns() {
        let mut block = Vec::new();
        block.extend_from_slice(b"mmh\x03\x02\x00\x00\x00\x05\x00");
        block.extend_from_slice(b"mmh\x01\x03\x00\x00\x00aj\x00");
        block.resize(64, 0);
        let entries: Vec<_> = metadata_entries(&block).collect();
        assert_eq!(entries, vec![(3, &[5, 0][..]), (1, &b"aj\0"[..])]);
        let overrun = b"mmh\x01\xff\x00\x00\x00ab";
        assert_eq!(metadata_entries(overrun).count(), 0);
    }
}
