//! Reading the files endpointd is pointed at — its configuration, a
//! kubeconfig, token files (and their re-reads), CA bundles, client
//! certificates and keys, the in-cluster service-account files — with a
//! bound: [`read_bounded`] opens the path without blocking (`O_NONBLOCK`,
//! so a FIFO cannot hang the open), refuses anything but a regular file
//! (a FIFO, a character device such as `/dev/zero`, a directory, a socket)
//! and reads at most the stated cap.
//!
//! Why: `check-config --config /dev/zero` used to grow to 20 GiB, a
//! kubeconfig or token file of `/dev/zero` to ~10 GiB, and a FIFO in any
//! of those places hung the process for ever. Every file read goes through
//! here; the caps are generous multiples of real sizes.
//!
//! Must never block on a file's open or read past its cap, and never quote
//! a file's contents in an error (a token file holds a secret).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Cap on endpointd's TOML configuration (the documented file is ~6 KiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Cap on a kubeconfig (one with a few embedded certificates is ~20 KiB;
/// kubectl's merged ones of many clusters stay well under a MiB).
pub const MAX_KUBECONFIG_BYTES: u64 = 4 << 20;
/// Cap on a bearer token file (a projected service-account token is ~1 KiB;
/// the API server refuses headers past ~1 MiB anyway).
pub const MAX_TOKEN_BYTES: u64 = 64 << 10;
/// Cap on a PEM file: CA bundle, client certificate or key (a certificate
/// is ~2 KiB; a distribution's whole system bundle is ~220 KiB).
pub const MAX_PEM_BYTES: u64 = 1 << 20;
/// Cap on the in-cluster `namespace` file (a namespace name is at most 63
/// characters).
pub const MAX_NAMESPACE_BYTES: u64 = 4 << 10;

/// `n` bytes in the largest whole unit (`1 MiB`, `64 KiB`, `100 bytes`).
pub fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Read the regular file at `path`, at most `cap` bytes; `what` names the
/// file in errors ("kubeconfig", "token file", …). The error keeps the
/// open's kind (`NotFound`, `PermissionDenied`) and says, without the path
/// (callers name it), what is wrong: `not a regular file (a FIFO)`, or
/// `larger than 1 MiB, the limit for a kubeconfig`.
pub fn read_bounded(path: &Path, cap: u64, what: &str) -> io::Result<Vec<u8>> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
    // writer for ever. It changes nothing for a regular file's reads.
    let f = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = f.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "not a regular file ({}); the {what} must be one",
                kind_of(kind)
            ),
        ));
    }
    let too_large = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {}, the limit for a {what}", human_bytes(cap)),
        )
    };
    if meta.len() > cap {
        return Err(too_large());
    }
    let mut out = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte past the cap tells a file that grew since the fstat.
    f.take(cap.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(out)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_bounded_string(path: &Path, cap: u64, what: &str) -> io::Result<String> {
    String::from_utf8(read_bounded(path, cap, what)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the {what} is not UTF-8 text"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(human_bytes(1 << 20), "1 MiB");
        assert_eq!(human_bytes(64 << 10), "64 KiB");
        assert_eq!(human_bytes(4 << 30), "4 GiB");
        assert_eq!(human_bytes(1000), "1000 bytes");
    }

    #[test]
    fn a_regular_file_within_its_cap_is_read() {
        let dir = std::env::temp_dir().join(format!("endpointd-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("f");
        std::fs::write(&p, b"12345").expect("write");
        assert_eq!(read_bounded(&p, 5, "file").expect("read"), b"12345");
        let e = read_bounded(&p, 4, "token file").expect_err("too large");
        assert_eq!(
            e.to_string(),
            "larger than 4 bytes, the limit for a token file"
        );
        let e = read_bounded(&dir, 4, "kubeconfig").expect_err("a directory");
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = read_bounded(&dir.join("missing"), 4, "x").expect_err("missing");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
