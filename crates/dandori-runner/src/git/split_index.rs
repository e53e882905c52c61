//! A step's index written as git's *split index* over the shared checkout's
//! index: the step's file holds only the entries its move changed and a `link`
//! extension naming the shared index (`sharedindex.<hash>`, a hard link of the
//! run's copy of the shared checkout's index in the step's administrative
//! directory) with two
//! bitmaps, the shared entries deleted and those replaced (`gitformat-index`,
//! "Split index"). Writing it costs what changed, not the repository's size:
//! at 100 000 files the full rewrite read and wrote 9 MB per step.
//!
//! Used for a workspace's first move from the shared checkout's commit (every
//! step's, the changed paths then being those from the run's start); a later
//! move, a shared index without a trailing hash (`index.skipHash`) or itself
//! split or sparse, or unmerged entries, are left to the full rewrite
//! (`git::index_file`).

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::index_file::{Entries, Entry, put};

/// The shared checkout's index, read once per run: its file, its trailing
/// hash (the name git looks it up by) and its entries' names in order (the
/// bitmaps' positions).
#[derive(Debug)]
pub struct BaseIndex {
    file: PathBuf,
    hash: [u8; 20],
    /// Every name, one after another.
    names: Vec<u8>,
    /// Where each name ends in `names`.
    ends: Vec<u32>,
}

impl BaseIndex {
    /// Reads the index at `path`; `None` where a split index over it cannot
    /// be written (see the module documentation).
    pub fn read(path: &Path) -> Option<BaseIndex> {
        let mut file = std::fs::File::open(path).ok()?;
        let total = file.metadata().ok()?.len() as usize;
        let hash = trailing_hash(&mut file)?;
        if hash == [0u8; 20] {
            return None;
        }
        file.rewind().ok()?;
        let mut entries = Entries::new(std::io::BufReader::with_capacity(1 << 18, file))?;
        let mut names = Vec::new();
        let mut ends = Vec::new();
        let mut e = Entry::empty();
        while entries.next(&mut e)? {
            if e.stage() != 0 {
                return None;
            }
            names.extend_from_slice(&e.name);
            ends.push(u32::try_from(names.len()).ok()?);
        }
        entries.finish(total)?;
        Some(BaseIndex {
            file: path.to_path_buf(),
            hash,
            names,
            ends,
        })
    }

    /// The index file that was read.
    pub fn file(&self) -> &Path {
        &self.file
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn name(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.names[start..self.ends[i] as usize]
    }

    /// The first position whose name is not below `key`.
    fn lower_bound(&self, key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.name(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The position of `name`, when the index has it.
    fn position(&self, name: &[u8]) -> Option<usize> {
        let i = self.lower_bound(name);
        (i < self.len() && self.name(i) == name).then_some(i)
    }

    /// The positions of the entries at or under `path` (a file, or every file
    /// of a directory: the names beginning with `path/` are consecutive).
    fn under(&self, path: &[u8], out: &mut Vec<usize>) {
        out.extend(self.position(path));
        let dir = [path, b"/"].concat();
        let mut i = self.lower_bound(&dir);
        while i < self.len() && self.name(i).starts_with(&dir) {
            out.push(i);
            i += 1;
        }
    }

    /// The shared index's file name in an administrative directory.
    fn file_name(&self) -> String {
        let hex: String = self.hash.iter().map(|b| format!("{b:02x}")).collect();
        format!("sharedindex.{hex}")
    }
}

/// The last 20 bytes of `file`.
fn trailing_hash(file: &mut std::fs::File) -> Option<[u8; 20]> {
    let mut hash = [0u8; 20];
    file.seek(std::io::SeekFrom::End(-20)).ok()?;
    file.read_exact(&mut hash).ok()?;
    Some(hash)
}

/// Writes the step's index at `index` (in the administrative directory
/// `admin`) as a split index over `base`: the
/// entries at or under `paths` are deleted from the shared ones, `fresh`
/// (sorted by name, stage 0) replace those of the same name and the rest are
/// added. `None` when it could not be written; nothing is then left behind
/// but the shared index's link.
pub(super) fn write(
    base: &BaseIndex,
    admin: &Path,
    index: &Path,
    paths: &[String],
    fresh: &[Entry],
) -> Option<()> {
    // The shared index, linked under the name git looks up; checked to end
    // with the hash it is named by (the run's copy is a file on disk, not
    // held open: git refuses a shared index whose hash differs).
    let shared = admin.join(base.file_name());
    if std::fs::symlink_metadata(&shared).is_err() {
        std::fs::hard_link(&base.file, &shared).ok()?;
    }
    let mut linked = std::fs::File::open(&shared).ok()?;
    if trailing_hash(&mut linked)? != base.hash {
        let _ = std::fs::remove_file(&shared);
        return None;
    }
    let mut deleted = Vec::new();
    for p in paths {
        base.under(p.as_bytes(), &mut deleted);
    }
    deleted.sort_unstable();
    deleted.dedup();
    let mut replaced: Vec<(usize, &Entry)> = Vec::new();
    let mut added: Vec<&Entry> = Vec::new();
    for f in fresh {
        match base.position(&f.name) {
            Some(i) if deleted.binary_search(&i).is_ok() => replaced.push((i, f)),
            // A path the move did not change cannot be written by it.
            Some(_) => return None,
            None => added.push(f),
        }
    }
    replaced.sort_unstable_by_key(|(i, _)| *i);
    deleted.retain(|i| replaced.binary_search_by_key(i, |(r, _)| *r).is_err());
    let mut out = Vec::with_capacity(64 * (replaced.len() + added.len()) + 128);
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(
        &u32::try_from(replaced.len() + added.len())
            .ok()?
            .to_be_bytes(),
    );
    for (_, f) in &replaced {
        // Replacing entries carry no name (git requires it empty).
        let mut nameless = (*f).clone();
        nameless.name.clear();
        let flags = u16::from_be_bytes([nameless.fixed[60], nameless.fixed[61]]) & !0x0FFF;
        nameless.fixed[60..62].copy_from_slice(&flags.to_be_bytes());
        put(&mut out, &nameless).ok()?;
    }
    for f in &added {
        put(&mut out, f).ok()?;
    }
    let mut link = base.hash.to_vec();
    ewah(&deleted, &mut link);
    let positions: Vec<usize> = replaced.iter().map(|(i, _)| *i).collect();
    ewah(&positions, &mut link);
    out.extend_from_slice(b"link");
    out.extend_from_slice(&u32::try_from(link.len()).ok()?.to_be_bytes());
    out.extend_from_slice(&link);
    out.extend_from_slice(&[0u8; 20]);
    super::index_file::replace(index, |f| f.write_all(&out).ok())
}

/// Appends the bitmap with the bits `set` (sorted, distinct) in git's EWAH
/// serialisation (`ewah/ewah_io.c`): the bit count, the word count, the 64-bit
/// words — each run-length word (bit 0 the running bit, 32 bits of run length
/// in words, 31 bits of literal words that follow) and its literal words — and
/// the position of the last run-length word, all big-endian.
fn ewah(set: &[usize], out: &mut Vec<u8>) {
    let mut words: Vec<u64> = vec![0];
    let mut rlw = 0usize;
    // The next word index the encoded words reach.
    let mut next = 0usize;
    let mut i = 0;
    while i < set.len() {
        let w = set[i] / 64;
        let mut literal = 0u64;
        while i < set.len() && set[i] / 64 == w {
            literal |= 1u64 << (set[i] % 64);
            i += 1;
        }
        let zeros = (w - next) as u64;
        let literals = words[rlw] >> 33;
        if zeros == 0 {
            // Right after the current run-length word's literals.
            words[rlw] += 1 << 33;
        } else if literals == 0 {
            // The current run-length word has no literal yet: its run grows.
            words[rlw] = (((words[rlw] >> 1 & 0xFFFF_FFFF) + zeros) << 1) | 1 << 33;
        } else {
            words.push((zeros << 1) | 1 << 33);
            rlw = words.len() - 1;
        }
        words.push(literal);
        next = w + 1;
    }
    let bits = set.last().map_or(0, |b| b + 1);
    out.extend_from_slice(&(bits as u32).to_be_bytes());
    out.extend_from_slice(&(words.len() as u32).to_be_bytes());
    for w in &words {
        out.extend_from_slice(&w.to_be_bytes());
    }
    out.extend_from_slice(&(rlw as u32).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The set bits of a serialised EWAH bitmap, decoded as git's
    /// `ewah_each_bit` walks it.
    fn decode(bytes: &[u8]) -> Vec<usize> {
        let be32 = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let n = be32(4);
        let words: Vec<u64> = (0..n)
            .map(|k| u64::from_be_bytes(bytes[8 + k * 8..16 + k * 8].try_into().unwrap()))
            .collect();
        assert_eq!(bytes.len(), 8 + n * 8 + 4);
        let mut bits = Vec::new();
        let (mut pos, mut k) = (0usize, 0usize);
        while k < words.len() {
            let rlw = words[k];
            let run = (rlw >> 1 & 0xFFFF_FFFF) as usize;
            if rlw & 1 == 1 {
                bits.extend(pos..pos + run * 64);
            }
            pos += run * 64;
            let literals = (rlw >> 33) as usize;
            for l in 0..literals {
                let w = words[k + 1 + l];
                bits.extend((0..64).filter(|b| w >> b & 1 == 1).map(|b| pos + b));
                pos += 64;
            }
            k += 1 + literals;
        }
        bits
    }

    #[test]
    fn bitmaps_decode_to_the_bits_set() {
        for set in [
            vec![],
            vec![0],
            vec![3, 63],
            vec![64],
            vec![1, 64, 65, 130, 1000, 1001, 99_999],
            (0..300).collect::<Vec<_>>(),
        ] {
            let mut out = Vec::new();
            ewah(&set, &mut out);
            assert_eq!(decode(&out), set);
        }
    }
}
