//! What an ELF object needs at run time, found the way `ld.so` finds it.
//!
//! For an object: its `PT_INTERP` (main executable only), then for every
//! `DT_NEEDED` name, in glibc's order: `DT_RPATH` of the object and of the
//! executable (only when the object has no `DT_RUNPATH`), `DT_RUNPATH`,
//! `/etc/ld.so.cache`, the default directories. `LD_LIBRARY_PATH` is not
//! consulted because the sandbox's environment never carries it. A candidate
//! must be an ELF object of the same class and machine, as the loader skips
//! others. The closure is transitive.
//!
//! Paths are kept as the loader will spell them inside the container, not
//! canonicalized: the rootfs has no symlinks, so `/lib64/ld-linux-x86-64.so.2`
//! must exist at that literal path there (its bind source is the same path on
//! the host, which the kernel resolves). Since the container sees a subset of
//! the host, the first candidate that exists on the host is also the first one
//! the loader will find inside, once it is bound.
//!
//! Not covered: `dlopen()` at run time (what Python extension modules need is
//! found by scanning them, see `discover`), `glibc-hwcaps` and legacy hwcap
//! subdirectories (the plain file found here is what the loader falls back to),
//! `$LIB` and `$PLATFORM` in search paths (such entries are skipped).

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};

use goblin::elf::Elf;

use crate::error::BundleError;
use crate::ldcache::{self, CacheEntry};
use crate::paths::normalize;

pub const LD_SO_CACHE: &str = "/etc/ld.so.cache";

/// The facts of one ELF object that lookup needs.
#[derive(Debug, Clone, Default)]
pub struct ElfFacts {
    pub interp: Option<String>,
    pub soname: Option<String>,
    pub needed: Vec<String>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
    pub is_64: bool,
    pub machine: u16,
}

pub fn has_elf_magic(head: &[u8]) -> bool {
    head.starts_with(b"\x7fELF")
}

/// Reads class and machine from the first bytes of a file; `None` when it is
/// not an ELF file (or not readable), which the loader also skips.
fn class_and_machine(path: &Path) -> Option<(bool, u16)> {
    let mut head = [0u8; 64];
    let mut f = std::fs::File::open(path).ok()?;
    f.read_exact(&mut head).ok()?;
    if !has_elf_magic(&head) {
        return None;
    }
    let h = Elf::parse_header(&head).ok()?;
    Some((
        h.e_ident[goblin::elf::header::EI_CLASS] == goblin::elf::header::ELFCLASS64,
        h.e_machine,
    ))
}

/// PT_INTERP of an ELF file, read from its first pages only (the full parse
/// of a 7 MB interpreter costs milliseconds at every sandbox start). Falls
/// back to [`read_facts`] when the headers lie further in.
pub fn read_interp(path: &Path) -> Option<String> {
    use goblin::elf::program_header::{ProgramHeader, PT_INTERP};
    use std::io::Read;
    let mut head = Vec::with_capacity(8192);
    std::fs::File::open(path)
        .and_then(|f| f.take(8192).read_to_end(&mut head))
        .ok()?;
    let h = Elf::parse_header(&head).ok()?;
    let ctx = goblin::container::Ctx::new(
        if h.e_ident[goblin::elf::header::EI_CLASS] == goblin::elf::header::ELFCLASS64 {
            goblin::container::Container::Big
        } else {
            goblin::container::Container::Little
        },
        if h.e_ident[goblin::elf::header::EI_DATA] == goblin::elf::header::ELFDATA2MSB {
            goblin::container::Endian::Big
        } else {
            goblin::container::Endian::Little
        },
    );
    let phs = ProgramHeader::parse(&head, h.e_phoff as usize, h.e_phnum as usize, ctx).ok();
    let Some(phs) = phs else {
        return read_facts(path).ok()?.interp;
    };
    let ph = phs.iter().find(|p| p.p_type == PT_INTERP)?;
    let (start, len) = (ph.p_offset as usize, ph.p_filesz as usize);
    match head.get(start..start.checked_add(len)?) {
        Some(bytes) => {
            let s = bytes.split(|b| *b == 0).next()?;
            String::from_utf8(s.to_vec()).ok()
        }
        None => read_facts(path).ok()?.interp,
    }
}

/// The facts of the ELF file at `path`. Reads only its headers, dynamic
/// section and string table (a few small reads, whatever the file's size: a
/// site-packages with a 500 MB library is scanned at every cache miss), and
/// falls back to parsing the whole file when those are not where a
/// little-endian ELF keeps them.
pub fn read_facts(path: &Path) -> Result<ElfFacts, BundleError> {
    let file = std::fs::File::open(path).map_err(|e| BundleError::io(path, e))?;
    if let Some(facts) = headers_only(&file) {
        return Ok(facts);
    }
    let bytes = std::fs::read(path).map_err(|e| BundleError::io(path, e))?;
    facts_from_bytes(&bytes).map_err(|reason| BundleError::Elf {
        path: path.to_path_buf(),
        reason,
    })
}

pub fn facts_from_bytes(bytes: &[u8]) -> Result<ElfFacts, String> {
    let elf = Elf::parse(bytes).map_err(|e| e.to_string())?;
    let own = |v: &[&str]| -> Vec<String> {
        v.iter()
            .flat_map(|s| s.split(':'))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    Ok(ElfFacts {
        interp: elf.interpreter.map(str::to_string),
        soname: elf.soname.map(str::to_string),
        needed: elf.libraries.iter().map(|s| s.to_string()).collect(),
        rpath: own(&elf.rpaths),
        runpath: own(&elf.runpaths),
        is_64: elf.is_64,
        machine: elf.header.e_machine,
    })
}

/// [`ElfFacts`] from positioned reads of the headers, `PT_DYNAMIC` and the
/// string table it names. `None` when anything is not as expected (big
/// endian, truncated, a string table no `PT_LOAD` maps): the caller then
/// parses the whole file.
fn headers_only(file: &std::fs::File) -> Option<ElfFacts> {
    use std::os::unix::fs::FileExt;
    const PT_LOAD: u32 = 1;
    const PT_DYNAMIC: u32 = 2;
    const PT_INTERP: u32 = 3;
    const DT_NEEDED: u64 = 1;
    const DT_STRTAB: u64 = 5;
    const DT_STRSZ: u64 = 10;
    const DT_SONAME: u64 = 14;
    const DT_RPATH: u64 = 15;
    const DT_RUNPATH: u64 = 29;
    // Anything larger is not a real object's table; the full parse decides.
    const MAX_TABLE: u64 = 16 << 20;

    let read = |off: u64, len: u64| -> Option<Vec<u8>> {
        if len > MAX_TABLE {
            return None;
        }
        let mut buf = vec![0u8; len as usize];
        file.read_exact_at(&mut buf, off).ok()?;
        Some(buf)
    };
    let u16_at = |b: &[u8], o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |b: &[u8], o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |b: &[u8], o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));

    let head = read(0, 64)?;
    if !has_elf_magic(&head) || head[5] != goblin::elf::header::ELFDATA2LSB {
        return None;
    }
    let is_64 = head[4] == goblin::elf::header::ELFCLASS64;
    let machine = u16_at(&head, 0x12)?;
    // (offset, entry size, count) of the program headers; field offsets per class.
    let (phoff, phentsize, phnum) = if is_64 {
        (
            u64_at(&head, 0x20)?,
            u16_at(&head, 0x36)?,
            u16_at(&head, 0x38)?,
        )
    } else {
        (
            u64::from(u32_at(&head, 0x1c)?),
            u16_at(&head, 0x2a)?,
            u16_at(&head, 0x2c)?,
        )
    };
    let phdrs = read(phoff, u64::from(phentsize) * u64::from(phnum))?;
    // (type, offset, vaddr, filesz) of each program header.
    let ph = |i: usize| -> Option<(u32, u64, u64, u64)> {
        let b = phdrs.get(i * phentsize as usize..(i + 1) * phentsize as usize)?;
        if is_64 {
            Some((u32_at(b, 0)?, u64_at(b, 8)?, u64_at(b, 16)?, u64_at(b, 32)?))
        } else {
            let f = |o| u32_at(b, o).map(u64::from);
            Some((u32_at(b, 0)?, f(4)?, f(8)?, f(16)?))
        }
    };
    let headers: Vec<(u32, u64, u64, u64)> = (0..phnum as usize).map(ph).collect::<Option<_>>()?;
    let mut facts = ElfFacts {
        is_64,
        machine,
        ..Default::default()
    };
    if let Some(&(_, off, _, len)) = headers.iter().find(|h| h.0 == PT_INTERP) {
        let b = read(off, len)?;
        let s = b.split(|c| *c == 0).next()?;
        facts.interp = Some(String::from_utf8(s.to_vec()).ok()?);
    }
    let Some(&(_, dyn_off, _, dyn_len)) = headers.iter().find(|h| h.0 == PT_DYNAMIC) else {
        // Static: nothing to load.
        return Some(facts);
    };
    let dynamic = read(dyn_off, dyn_len)?;
    let entry = if is_64 { 16 } else { 8 };
    let mut tags: Vec<(u64, u64)> = Vec::new();
    for e in dynamic.chunks_exact(entry) {
        let (tag, val) = if is_64 {
            (u64_at(e, 0)?, u64_at(e, 8)?)
        } else {
            (u64::from(u32_at(e, 0)?), u64::from(u32_at(e, 4)?))
        };
        if tag == 0 {
            break;
        }
        tags.push((tag, val));
    }
    let value = |t: u64| tags.iter().find(|(tag, _)| *tag == t).map(|(_, v)| *v);
    let (Some(strtab), Some(strsz)) = (value(DT_STRTAB), value(DT_STRSZ)) else {
        return Some(facts);
    };
    // DT_STRTAB is an address: the PT_LOAD that maps it gives its file offset.
    let (_, load_off, load_vaddr, _) = *headers.iter().find(|&&(t, _, vaddr, filesz)| {
        t == PT_LOAD
            && strtab >= vaddr
            && strtab
                .checked_add(strsz)
                .is_some_and(|end| end <= vaddr.saturating_add(filesz))
    })?;
    let strings = read(strtab - load_vaddr + load_off, strsz)?;
    let string = |off: u64| -> Option<String> {
        let s = strings.get(off as usize..)?.split(|c| *c == 0).next()?;
        String::from_utf8(s.to_vec()).ok()
    };
    let split = |v: String| -> Vec<String> {
        v.split(':')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    for &(tag, val) in &tags {
        match tag {
            DT_NEEDED => facts.needed.push(string(val)?),
            DT_SONAME => facts.soname = Some(string(val)?),
            DT_RPATH => facts.rpath.extend(split(string(val)?)),
            DT_RUNPATH => facts.runpath.extend(split(string(val)?)),
            _ => {}
        }
    }
    Some(facts)
}

/// The loader's built-in directories, as `ld.so --help` lists them on
/// multiarch (Debian-style) glibc.
fn default_dirs(is_64: bool, machine: u16) -> Vec<&'static str> {
    use goblin::elf::header::{EM_386, EM_AARCH64, EM_X86_64};
    let triple = match (machine, is_64) {
        (EM_X86_64, true) => Some(("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")),
        (EM_AARCH64, true) => Some(("/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")),
        (EM_386, false) => Some(("/lib/i386-linux-gnu", "/usr/lib/i386-linux-gnu")),
        _ => None,
    };
    let mut v = Vec::new();
    if let Some((a, b)) = triple {
        v.extend([a, b]);
    }
    if is_64 {
        v.extend(["/lib64", "/usr/lib64"]);
    }
    v.extend(["/lib", "/usr/lib"]);
    v
}

/// A closure in progress: the objects still to resolve (path, facts, and
/// whether a failure below it stops the program), every path met, the
/// sonames the loader has loaded, the executable's DT_RPATH.
struct Walk {
    queue: VecDeque<(PathBuf, ElfFacts, bool)>,
    seen: HashSet<PathBuf>,
    loaded: HashSet<String>,
    exe_rpath: Vec<String>,
}

/// Resolves the run-time needs of ELF objects against one ld.so.cache image.
pub struct Resolver {
    cache: Vec<CacheEntry>,
    cwd: PathBuf,
}

impl Resolver {
    /// Reads the host's `/etc/ld.so.cache`; a missing cache is an empty one,
    /// as for the loader.
    pub fn from_host() -> Self {
        let cache = std::fs::read(LD_SO_CACHE)
            .map(|b| ldcache::parse(&b))
            .unwrap_or_default();
        Resolver {
            cache,
            cwd: PathBuf::from("/"),
        }
    }

    /// Adds to `out` everything the loader opens to start `exe`, and what the
    /// loader needs for each object in `also` (e.g. extension modules), all
    /// transitively. `exe` is the path the workload is exec'd by. A library
    /// that `exe` needs and that is not found is an error (the program
    /// cannot start); one needed only through `also` is pushed to
    /// `unresolved` with the object that needs it (that module would not
    /// load on the host either), as is an object of `also` that is no
    /// readable ELF file.
    pub fn closure(
        &self,
        exe: &Path,
        also: &[PathBuf],
        out: &mut BTreeSet<PathBuf>,
        unresolved: &mut Vec<(String, PathBuf)>,
    ) -> Result<(), BundleError> {
        let main = read_facts(exe)?;
        out.insert(exe.to_path_buf());
        let mut loaded: HashSet<String> = HashSet::new();
        if let Some(interp) = &main.interp {
            let p = normalize(Path::new(interp), &self.cwd);
            if !p.is_file() {
                return Err(BundleError::LibraryNotFound {
                    lib: interp.clone(),
                    needed_by: exe.to_path_buf(),
                });
            }
            // The loader is loaded already: a DT_NEEDED of its soname (libc
            // has one) is satisfied by it, not looked up again.
            if let Some(so) = read_facts(&p)?.soname {
                loaded.insert(so);
            }
            out.insert(p);
        }
        // DT_RPATH of the executable applies to every object without DT_RUNPATH.
        let exe_rpath: Vec<String> = if main.runpath.is_empty() {
            main.rpath.iter().map(|r| expand_origin(r, exe)).collect()
        } else {
            Vec::new()
        };
        let mut walk = Walk {
            queue: VecDeque::from([(exe.to_path_buf(), main, true)]),
            seen: HashSet::from([exe.to_path_buf()]),
            loaded,
            exe_rpath,
        };
        // The program's own objects first, to the end, so that an object
        // reached both ways counts as the program's (strict).
        self.drain(&mut walk, out, unresolved)?;
        for extra in also {
            if walk.seen.insert(extra.clone()) {
                match read_facts(extra) {
                    Ok(f) => {
                        out.insert(extra.clone());
                        walk.queue.push_back((extra.clone(), f, false));
                    }
                    Err(e) => unresolved.push((e.to_string(), extra.clone())),
                }
            }
        }
        self.drain(&mut walk, out, unresolved)?;
        Ok(())
    }

    /// Resolves what each queued object needs, and what that needs, until
    /// the queue is empty.
    fn drain(
        &self,
        walk: &mut Walk,
        out: &mut BTreeSet<PathBuf>,
        unresolved: &mut Vec<(String, PathBuf)>,
    ) -> Result<(), BundleError> {
        let Walk {
            queue,
            seen,
            loaded,
            exe_rpath,
        } = walk;
        while let Some((obj, facts, strict)) = queue.pop_front() {
            for name in &facts.needed {
                if loaded.contains(name) {
                    continue;
                }
                let Some(found) = self.lookup(name, &obj, &facts, exe_rpath.as_slice()) else {
                    if strict {
                        return Err(BundleError::LibraryNotFound {
                            lib: name.clone(),
                            needed_by: obj.clone(),
                        });
                    }
                    unresolved.push((name.clone(), obj.clone()));
                    continue;
                };
                for p in found {
                    if seen.insert(p.clone()) {
                        let f = match read_facts(&p) {
                            Ok(f) => f,
                            Err(e) if !strict => {
                                unresolved.push((e.to_string(), obj.clone()));
                                continue;
                            }
                            Err(e) => return Err(e),
                        };
                        out.insert(p.clone());
                        if strict {
                            loaded.extend(f.soname.clone());
                        }
                        queue.push_back((p, f, strict));
                    }
                }
            }
        }
        Ok(())
    }

    /// The path(s) the loader would open for `name` needed by `obj`. More than
    /// one only for cache entries in `glibc-hwcaps` subdirectories, which are
    /// all bound since the loader picks among them by CPU.
    fn lookup(
        &self,
        name: &str,
        obj: &Path,
        facts: &ElfFacts,
        exe_rpath: &[String],
    ) -> Option<Vec<PathBuf>> {
        let compatible = |p: &Path| class_and_machine(p) == Some((facts.is_64, facts.machine));
        if name.contains('/') {
            let p = normalize(Path::new(name), &self.cwd);
            return compatible(&p).then(|| vec![p]);
        }
        let mut dirs: Vec<String> = Vec::new();
        if facts.runpath.is_empty() {
            dirs.extend(facts.rpath.iter().map(|r| expand_origin(r, obj)));
            dirs.extend(exe_rpath.iter().cloned());
        }
        dirs.extend(facts.runpath.iter().map(|r| expand_origin(r, obj)));
        for d in dirs
            .iter()
            .filter(|d| !d.contains('$') && d.starts_with('/'))
        {
            let p = normalize(&Path::new(d).join(name), &self.cwd);
            if compatible(&p) {
                return Some(vec![p]);
            }
        }
        let mut hits: Vec<PathBuf> = Vec::new();
        let mut plain: Option<PathBuf> = None;
        for e in self.cache.iter().filter(|e| e.name == name) {
            let p = PathBuf::from(&e.path);
            if !compatible(&p) {
                continue;
            }
            if e.hwcap != 0 {
                hits.push(p);
            } else if plain.is_none() {
                plain = Some(p);
            }
        }
        if let Some(p) = plain {
            hits.push(p);
        }
        if !hits.is_empty() {
            return Some(hits);
        }
        for d in default_dirs(facts.is_64, facts.machine) {
            let p = Path::new(d).join(name);
            if compatible(&p) {
                return Some(vec![p]);
            }
        }
        None
    }
}

/// Expands `$ORIGIN` / `${ORIGIN}` to the directory of the object's path.
fn expand_origin(entry: &str, obj: &Path) -> String {
    let origin = obj
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| "/".into());
    entry
        .replace("${ORIGIN}", &origin)
        .replace("$ORIGIN", &origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loader's own answer, for comparison: `ld.so --list` maps the objects
    /// and prints them without running the program's code.
    fn loader_list(exe: &Path) -> Option<Vec<PathBuf>> {
        let out = std::process::Command::new("/lib64/ld-linux-x86-64.so.2")
            .arg("--list")
            .arg(exe)
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        Some(
            text.lines()
                .filter_map(|l| {
                    let l = l.trim();
                    let path = match l.split_once("=>") {
                        Some((_, rhs)) => rhs.trim(),
                        None => l,
                    };
                    let path = path.split(" (").next()?.trim();
                    path.starts_with('/').then(|| PathBuf::from(path))
                })
                .collect(),
        )
    }

    fn check_against_loader(exe: &str) {
        let exe = Path::new(exe);
        if !exe.exists() {
            eprintln!("skipped: {} not on this host", exe.display());
            return;
        }
        let Some(want) = loader_list(exe) else {
            eprintln!("skipped: no x86_64 glibc loader");
            return;
        };
        let mut got = BTreeSet::new();
        Resolver::from_host()
            .closure(exe, &[], &mut got, &mut Vec::new())
            .unwrap();
        for w in &want {
            assert!(
                got.contains(w),
                "loader opens {} for {}, we found {got:?}",
                w.display(),
                exe.display()
            );
        }
    }

    #[test]
    fn agrees_with_the_loader_on_host_binaries() {
        check_against_loader("/usr/bin/true");
        check_against_loader("/usr/bin/python3.11");
        check_against_loader("/root/.pyenv/versions/3.11.7/bin/python3.11");
    }

    #[test]
    fn headers_only_agrees_with_the_full_parse() {
        let mut checked = 0;
        for dir in ["/usr/bin", "/usr/lib/x86_64-linux-gnu"] {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            for p in rd.filter_map(|e| e.ok()).map(|e| e.path()).take(400) {
                let Ok(bytes) = std::fs::read(&p) else {
                    continue;
                };
                let Ok(full) = facts_from_bytes(&bytes) else {
                    continue;
                };
                let fast = headers_only(&std::fs::File::open(&p).unwrap())
                    .unwrap_or_else(|| panic!("{}: headers-only read failed", p.display()));
                assert_eq!(fast.needed, full.needed, "{}", p.display());
                assert_eq!(fast.soname, full.soname, "{}", p.display());
                assert_eq!(fast.rpath, full.rpath, "{}", p.display());
                assert_eq!(fast.runpath, full.runpath, "{}", p.display());
                assert_eq!(fast.interp, full.interp, "{}", p.display());
                assert_eq!((fast.is_64, fast.machine), (full.is_64, full.machine));
                checked += 1;
            }
        }
        assert!(checked > 50, "only {checked} ELF files compared");
    }

    #[test]
    fn static_binary_needs_nothing() {
        let bb = Path::new("/usr/bin/busybox");
        if !bb.exists() {
            eprintln!("skipped: no busybox-static");
            return;
        }
        let f = read_facts(bb).unwrap();
        assert!(f.interp.is_none() && f.needed.is_empty());
        let mut got = BTreeSet::new();
        Resolver::from_host()
            .closure(bb, &[], &mut got, &mut Vec::new())
            .unwrap();
        assert_eq!(got.into_iter().collect::<Vec<_>>(), vec![bb.to_path_buf()]);
    }

    #[test]
    fn origin_expansion() {
        assert_eq!(
            expand_origin("$ORIGIN/../lib", Path::new("/o/bin/py")),
            "/o/bin/../lib"
        );
        assert_eq!(expand_origin("${ORIGIN}", Path::new("/o/x.so")), "/o");
    }

    #[test]
    fn not_elf_is_an_error_naming_the_path() {
        let t = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(t.path(), b"#!/bin/sh\n").unwrap();
        let e = read_facts(t.path()).unwrap_err().to_string();
        assert!(e.starts_with(&t.path().display().to_string()), "{e}");
    }
}

#[cfg(test)]
mod interp_tests {
    use super::*;

    #[test]
    fn interp_from_the_first_pages_matches_the_full_parse() {
        for bin in ["/bin/true", "/usr/bin/python3.11", "/usr/bin/busybox"] {
            let p = Path::new(bin);
            if !p.exists() {
                continue;
            }
            assert_eq!(read_interp(p), read_facts(p).unwrap().interp, "{bin}");
        }
    }
}
