//! Process memory hygiene on glibc: fewer malloc arenas, freed memory
//! handed back to the kernel after a rejected oversized response, and
//! [`PageBuf`], a read buffer for LIST pages kept out of the malloc heap.
//!
//! glibc gives each thread that allocates concurrently an arena of its own
//! (up to 8 per core) and keeps what is freed in it: six informer threads
//! each decoding a large (or hostile, endless) LIST in turn would keep six
//! peaks resident. One arena is enough for endpointd's few busy threads
//! (measured: loaded RSS 49.7 → 46.1 MiB with two; one more arena less
//! took steady RSS under churn 50.0 → 47.6 MiB with CPU per change and
//! latency unchanged), and
//! `malloc_trim` after a rejected body returns its pages at once.
//!
//! Fast bins are off (`M_MXFAST` 0): under readiness churn every flip
//! replaces a cached pod, Endpoints and slice while decode and plan
//! transients of the same small sizes come and go; chunks parked in fast
//! bins are never coalesced until a large request, and the heap grew by
//! free fragments. Measured at full size (10,000 pods, 6,000 flips,
//! 2026-11-25): steady RSS 32.9 → 31.5 MiB, growth over 4,000 flips
//! 5.4 → 4.0 MB, CPU per flip not worse (883 → 758 ms per 1,000 in one
//! pair of runs; an earlier try, before the caches got compact, measured
//! it slightly worse). The per-thread tcache stays in front of them.
//!
//! A LIST page (about 1.3 MB for 500 pods) is read whole before it is
//! decoded (see `kube::body`). Through malloc that buffer would be a
//! problem: glibc serves it with mmap at first, but freeing an mmapped
//! chunk raises the dynamic mmap threshold to its size, so every later
//! page buffer came from the heap and left a megabyte-sized hole resident
//! after the LIST. [`PageBuf`] maps its own anonymous memory instead (only
//! the pages written are ever resident) and unmaps it when dropped, so
//! the heap never sees it.
//!
//! Owns only these calls and that mapping; on other C libraries
//! `limit_arenas` and `trim` do nothing, and off Linux a [`PageBuf`] is a
//! plain `Vec`. Must never be called with allocations of its own in flight
//! that it relies on.

// glibc allocator calls and an mmap-backed buffer: every unsafe block says why it holds.
#![allow(unsafe_code)]

/// Limit glibc to one malloc arena, without fast bins. Call once, first thing in `run`,
/// before threads start.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; no pointers.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

/// Return free heap memory to the kernel (after a large body was dropped).
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A byte buffer of at most `cap` bytes in its own anonymous memory
/// mapping (off Linux: a `Vec`), filled once from a reader. Reserving
/// `cap` costs address space only: a page becomes resident when it is
/// written, and all of them go back to the kernel on drop.
pub struct PageBuf {
    #[cfg(target_os = "linux")]
    ptr: std::ptr::NonNull<u8>,
    #[cfg(not(target_os = "linux"))]
    vec: Vec<u8>,
    cap: usize,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone (like a Vec's buffer).
#[cfg(target_os = "linux")]
unsafe impl Send for PageBuf {}

impl PageBuf {
    /// Reserve `cap` bytes (`cap` > 0); `None` if the mapping fails.
    pub fn new(cap: usize) -> Option<PageBuf> {
        if cap == 0 {
            return None;
        }
        #[cfg(target_os = "linux")]
        {
            // SAFETY: a fresh private anonymous mapping; no existing memory
            // is touched. The result is checked before use.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    cap,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return None;
            }
            let ptr = std::ptr::NonNull::new(p.cast::<u8>())?;
            Some(PageBuf { ptr, cap, len: 0 })
        }
        #[cfg(not(target_os = "linux"))]
        {
            Some(PageBuf {
                vec: Vec::new(),
                cap,
                len: 0,
            })
        }
    }

    /// Forget what was read; the pages already written stay resident and
    /// are written over by the next [`PageBuf::fill`].
    pub fn clear(&mut self) {
        self.len = 0;
        #[cfg(not(target_os = "linux"))]
        self.vec.clear();
    }

    /// Read from `r` until it ends (`Ok(true)`) or the buffer is full
    /// (`Ok(false)`: more may follow).
    pub fn fill<R: std::io::Read>(&mut self, r: &mut R) -> std::io::Result<bool> {
        #[cfg(not(target_os = "linux"))]
        {
            let want = (self.cap - self.len) as u64;
            let n = r.take(want).read_to_end(&mut self.vec)?;
            self.len += n;
            return Ok(self.len < self.cap);
        }
        #[cfg(target_os = "linux")]
        while self.len < self.cap {
            // SAFETY: `ptr` maps `cap` bytes, readable and writable,
            // zero-filled by the kernel (so initialised), owned by `self`
            // and borrowed mutably here only.
            let all = unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap) };
            match r.read(&mut all[self.len..]) {
                Ok(0) => return Ok(true),
                // A reader claiming more than it was given is a bug; never
                // let it move `len` past the mapping.
                Ok(n) => self.len += n.min(self.cap - self.len),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        #[cfg(target_os = "linux")]
        Ok(false)
    }

    /// The bytes read so far.
    pub fn as_slice(&self) -> &[u8] {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: the first `len` of the `cap` mapped bytes were written
            // by `fill`; `len <= cap`.
            unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
        }
        #[cfg(not(target_os = "linux"))]
        {
            &self.vec
        }
    }
}

#[cfg(target_os = "linux")]
impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `cap` are exactly what mmap returned and was
        // asked for; no borrow of the mapping outlives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.cap);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PageBuf;
    use std::io::{Cursor, Read};

    #[test]
    fn a_page_buf_holds_a_whole_body_or_says_it_is_full() {
        let body: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        // Whole: the reader ends first (also when it ends exactly at cap).
        for cap in [10_001, 1 << 20] {
            let mut b = PageBuf::new(cap).expect("map");
            assert!(b.fill(&mut Cursor::new(&body)).expect("read"), "{cap}");
            assert_eq!(b.as_slice(), &body[..]);
        }
        // Full: the first `cap` bytes, and the reader keeps the rest.
        for cap in [1, 4096, 10_000] {
            let mut b = PageBuf::new(cap).expect("map");
            let mut r = Cursor::new(&body);
            assert!(!b.fill(&mut r).expect("read"), "{cap}");
            assert_eq!(b.as_slice(), &body[..cap]);
            let mut rest = Vec::new();
            r.read_to_end(&mut rest).expect("rest");
            assert_eq!(rest, &body[cap..]);
        }
        // Cleared, it is filled again from the start.
        let mut b = PageBuf::new(1 << 20).expect("map");
        assert!(b.fill(&mut Cursor::new(&body)).expect("read"));
        b.clear();
        assert!(b.as_slice().is_empty());
        assert!(b.fill(&mut Cursor::new(&body[..7])).expect("read"));
        assert_eq!(b.as_slice(), &body[..7]);
        assert!(PageBuf::new(0).is_none());
        let mut empty = PageBuf::new(4096).expect("map");
        assert!(empty.fill(&mut Cursor::new(b"")).expect("read"));
        assert!(empty.as_slice().is_empty());
    }

    #[test]
    fn a_page_buf_passes_read_errors_on() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("reset"))
            }
        }
        let mut b = PageBuf::new(4096).expect("map");
        assert!(b.fill(&mut Broken).is_err());
    }
}
