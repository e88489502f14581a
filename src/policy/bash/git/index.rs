//! The submodules a work tree holds, from git's index (gitformat-index:
//! versions 2 to 4): the paths of its gitlink entries. `git status` and
//! `git diff` run git again in each populated one, with *its* config, so
//! the repository check must look there too — and an index is the only
//! place that says which directories those are (a submodule's `.git` can
//! be a directory of its own, not under `.git/modules`).
//!
//! Indexes of large repositories run to megabytes, and every git command
//! is checked: the answer is kept per index file and used again while the
//! file's identity (device, inode, size, modification and change times to
//! the nanosecond) is unchanged; any write to the file changes its change
//! time, which no process can set back.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Larger indexes are not read (the git command asks).
const MAX_BYTES: u64 = 256 << 20;
/// Index files whose gitlinks are kept.
const KEPT: usize = 16;

type Identity = (u64, u64, u64, i64, i64, i64, i64, usize);
type Kept = Vec<(PathBuf, Identity, Rc<Vec<Vec<u8>>>)>;

// Thread-local because reading a large index for every git line would
// dominate its decision; kept by the file's identity, so a changed index
// is read again.
thread_local! {
    static CACHE: RefCell<Kept> = const { RefCell::new(Vec::new()) };
}

/// The gitlink paths (relative to the work tree, as bytes) in the index
/// file `path`, whose object names are `hash_len` bytes; none when there
/// is no index. Err when it cannot be read or tern cannot be certain of
/// its content (a split index keeps entries in another file).
pub(crate) fn gitlinks(path: &Path, hash_len: usize) -> Result<Rc<Vec<Vec<u8>>>, String> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Rc::default()),
        Err(e) => return Err(format!("{} cannot be read ({e})", path.display())),
    };
    let id: Identity = (
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
        hash_len,
    );
    let hit = CACHE.with(|c| {
        c.borrow()
            .iter()
            .find(|(p, i, _)| p == path && *i == id)
            .map(|(_, _, v)| Rc::clone(v))
    });
    if let Some(v) = hit {
        return Ok(v);
    }
    if meta.size() > MAX_BYTES {
        return Err(format!(
            "{} is larger than tern reads to find submodules",
            path.display()
        ));
    }
    let bytes =
        std::fs::read(path).map_err(|e| format!("{} cannot be read ({e})", path.display()))?;
    let links = Rc::new(parse(&bytes, hash_len).map_err(|e| format!("{}: {e}", path.display()))?);
    // Kept only when the file read is the one whose identity was taken.
    if bytes.len() as u64 == meta.size() {
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            c.retain(|(p, _, _)| p != path);
            if c.len() >= KEPT {
                c.remove(0);
            }
            c.push((path.to_path_buf(), id, Rc::clone(&links)));
        });
    }
    Ok(links)
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// The gitlink paths of an index file's bytes.
pub(crate) fn parse(b: &[u8], hash_len: usize) -> Result<Vec<Vec<u8>>, String> {
    let bad = |what: &str| format!("an index tern cannot read ({what})");
    if b.get(..4) != Some(b"DIRC") {
        return Err(bad("no DIRC signature"));
    }
    let version = be32(b, 4).ok_or_else(|| bad("short"))?;
    if !(2..=4).contains(&version) {
        return Err(bad(&format!("version {version}")));
    }
    let count = be32(b, 8).ok_or_else(|| bad("short"))? as usize;
    let end = b.len().checked_sub(hash_len).ok_or_else(|| bad("short"))?;
    let mut pos = 12;
    let mut links = Vec::new();
    let mut prev: Vec<u8> = Vec::new();
    // ctime, mtime, dev, ino, mode, uid, gid, size: 40 bytes, then the
    // object name and 16 bits of flags.
    let fixed = 40 + hash_len + 2;
    for _ in 0..count {
        if pos + fixed > end {
            return Err(bad("an entry runs past the end"));
        }
        let mode = be32(b, pos + 24).ok_or_else(|| bad("short"))?;
        let flags = be16(b, pos + 40 + hash_len).ok_or_else(|| bad("short"))?;
        let mut p = pos + fixed;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return Err(bad("extended flags in a version 2 index"));
            }
            p += 2;
        }
        let header = p - pos;
        let path = if version == 4 {
            // Prefix compression: drop N bytes of the previous path, then
            // a NUL-terminated suffix.
            let (strip, used) = varint(&b[p..end]).ok_or_else(|| bad("a bad path prefix"))?;
            p += used;
            let keep = prev
                .len()
                .checked_sub(strip)
                .ok_or_else(|| bad("a path prefix longer than the path before"))?;
            let nul = b[p..end]
                .iter()
                .position(|&c| c == 0)
                .ok_or_else(|| bad("a path without its end"))?;
            let mut path = prev[..keep].to_vec();
            path.extend_from_slice(&b[p..p + nul]);
            pos = p + nul + 1;
            path
        } else {
            let nul = b[p..end]
                .iter()
                .position(|&c| c == 0)
                .ok_or_else(|| bad("a path without its end"))?;
            let path = b[p..p + nul].to_vec();
            // Entries are padded with 1 to 8 NULs to a multiple of 8.
            pos += (header + nul + 8) & !7;
            path
        };
        if mode & 0o170000 == 0o160000 {
            links.push(path.clone());
        }
        prev = path;
    }
    // Extensions: a split index keeps its entries in another file.
    while pos + 8 <= end {
        let sig = &b[pos..pos + 4];
        let size = be32(b, pos + 4).ok_or_else(|| bad("short"))? as usize;
        if sig == b"link" {
            return Err(bad("a split index"));
        }
        pos = pos
            .checked_add(8 + size)
            .filter(|p| *p <= end)
            .ok_or_else(|| bad("an extension runs past the end"))?;
    }
    if pos != end {
        return Err(bad("bytes after the last extension"));
    }
    Ok(links)
}

/// git's offset encoding (each continuation adds one before shifting).
fn varint(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    let mut c = *b.first()?;
    let mut v = usize::from(c & 0x7f);
    while c & 0x80 != 0 {
        i += 1;
        c = *b.get(i)?;
        v = v.checked_add(1)?.checked_mul(128)? + usize::from(c & 0x7f);
        if i > 8 {
            return None;
        }
    }
    Some((v, i + 1))
}
