//! journald's native protocol: one datagram a record on journald's socket,
//! each field `NAME=value\n`, or `NAME\n` + the value's length as a
//! little-endian u64 + the value + `\n` when the value holds a newline
//! (systemd's "Native Journal Protocol").
//!
//! [`encode`] is pure; [`Journal`] only sends. A record journald does not
//! take (socket gone, datagram refused) is the caller's to write to stderr
//! instead: nothing is lost.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::Path;

/// Where journald listens for native-protocol datagrams.
pub const SOCKET: &str = "/run/systemd/journal/socket";

/// The longest MESSAGE sent; longer ones are cut (with `…`) so that a
/// datagram always fits the socket's default buffer.
pub const MAX_MESSAGE: usize = 48 * 1024;

/// One record's datagram: `fields` in order, each value as given (a
/// newline switches that field to the length-prefixed form).
pub fn encode(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.iter().map(|(k, v)| k.len() + v.len() + 10).sum());
    for (name, value) in fields {
        out.extend_from_slice(name.as_bytes());
        if value.contains('\n') {
            out.push(b'\n');
            out.extend_from_slice(&(value.len() as u64).to_le_bytes());
        } else {
            out.push(b'=');
        }
        out.extend_from_slice(value.as_bytes());
        out.push(b'\n');
    }
    out
}

/// `message` cut to at most [`MAX_MESSAGE`] bytes on a character boundary.
pub fn bounded(message: &str) -> std::borrow::Cow<'_, str> {
    if message.len() <= MAX_MESSAGE {
        return message.into();
    }
    let mut end = MAX_MESSAGE;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end]).into()
}

/// A connected datagram socket to journald.
#[derive(Debug)]
pub struct Journal {
    socket: UnixDatagram,
}

impl Journal {
    /// Connect to journald's socket at `path` (normally [`SOCKET`]).
    pub fn connect(path: &Path) -> io::Result<Journal> {
        let socket = UnixDatagram::unbound()?;
        socket.connect(path)?;
        Ok(Journal { socket })
    }

    /// Send one datagram (from [`encode`]).
    pub fn send(&self, datagram: &[u8]) -> io::Result<()> {
        self.socket.send(datagram).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_plain_and_length_prefixed() {
        let got = encode(&[("PRIORITY", "6"), ("MESSAGE", "a\nb"), ("X", "")]);
        let mut want = b"PRIORITY=6\nMESSAGE\n".to_vec();
        want.extend_from_slice(&3u64.to_le_bytes());
        want.extend_from_slice(b"a\nb\nX=\n");
        assert_eq!(got, want);
    }

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_MESSAGE);
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_MESSAGE + '…'.len_utf8(), "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert_eq!(bounded("short"), "short");
    }
}
