//! Reading inputs and writing outputs the Unix way, without ever losing an input.
//!
//! - `-` as an input path is standard input (read once, then kept for later readers of
//!   the same process); as an output path it is standard output.
//! - Text inputs are capped at [`MAX_TEXT_BYTES`]: `/dev/zero` given as a program is an
//!   error, not a process that reads until memory runs out.
//! - Every file polyc reads is remembered (device and inode, and its canonical path).
//!   [`write_output`] refuses to write over any of them, as gcc refuses `gcc x.c -o x.c`.
//! - Outputs are written to a temporary file beside the target and renamed over it, so a
//!   crash never leaves half a file. Special files (`/dev/null`, a FIFO, a terminal) are
//!   written in place, never replaced.

use miette::{miette, Result};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The largest text input (program, tile spec, description, constraints, tree) polyc reads.
pub const MAX_TEXT_BYTES: u64 = 16 << 20;

/// The identity of a file read as an input.
#[derive(Clone, Debug, PartialEq, Eq)]
struct InputId {
    /// `(device, inode)` where the platform has them.
    node: Option<(u64, u64)>,
    /// The canonical path, when it resolves.
    canonical: Option<PathBuf>,
    /// The path as given, for messages.
    shown: String,
}

fn inputs() -> &'static Mutex<Vec<InputId>> {
    static INPUTS: OnceLock<Mutex<Vec<InputId>>> = OnceLock::new();
    INPUTS.get_or_init(|| Mutex::new(Vec::new()))
}

#[cfg(unix)]
fn node_of(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn node_of(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Remembers `path` as an input: [`write_output`] will refuse to overwrite it. Paths that
/// do not exist (yet) and `-` are ignored.
pub fn register_input(path: &Path) {
    if path.as_os_str() == "-" {
        return;
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if !meta.is_file() {
        return;
    }
    let id = InputId {
        node: node_of(&meta),
        canonical: std::fs::canonicalize(path).ok(),
        shown: path.display().to_string(),
    };
    let mut list = inputs().lock().unwrap_or_else(|p| p.into_inner());
    if !list.contains(&id) {
        list.push(id);
    }
}

/// Standard input, read once (a program given as `-`).
fn stdin_bytes(limit: u64) -> Result<Vec<u8>> {
    static STDIN: OnceLock<std::result::Result<Vec<u8>, String>> = OnceLock::new();
    let got = STDIN.get_or_init(|| {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut buf)
            .map(|_| buf)
            .map_err(|e| e.to_string())
    });
    match got {
        Ok(b) => Ok(b.clone()),
        Err(e) => Err(miette!("cannot read standard input: {e}")),
    }
}

/// Reads a text input (`-` is standard input), at most [`MAX_TEXT_BYTES`], and remembers
/// it as an input.
pub fn read_text_input(path: &str) -> Result<Vec<u8>> {
    read_capped(path, MAX_TEXT_BYTES, "text input")
}

/// Reads an input of at most `limit` bytes (`-` is standard input) and remembers it as an
/// input. `what` names the kind of input in the error for an oversized one.
pub fn read_capped(path: &str, limit: u64, what: &str) -> Result<Vec<u8>> {
    let bytes = if path == "-" {
        stdin_bytes(limit)?
    } else {
        let p = Path::new(path);
        let file = std::fs::File::open(p).map_err(|e| {
            miette!(
                help = "check the path; polyc reads UTF-8 text files (`-` is standard input)",
                "cannot read `{path}`: {e}"
            )
        })?;
        if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(miette!(
                help = "give the path of a file, not of a directory",
                "cannot read `{path}`: it is a directory"
            ));
        }
        let mut buf = Vec::new();
        file.take(limit + 1)
            .read_to_end(&mut buf)
            .map_err(|e| miette!(help = "check the path", "cannot read `{path}`: {e}"))?;
        register_input(p);
        buf
    };
    if bytes.len() as u64 > limit {
        return Err(miette!(
            help = format!(
                "polyc reads {what}s of at most {} MiB; is `{path}` the file you meant?",
                limit >> 20
            ),
            "`{path}` is larger than {} MiB",
            limit >> 20
        ));
    }
    Ok(bytes)
}

/// The input that `path` would overwrite, if any.
fn clobbered_input(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok();
    let node = meta.as_ref().and_then(node_of);
    let canonical = std::fs::canonicalize(path).ok();
    let list = inputs().lock().unwrap_or_else(|p| p.into_inner());
    list.iter()
        .find(|i| {
            (node.is_some() && i.node == node) || (canonical.is_some() && i.canonical == canonical)
        })
        .map(|i| i.shown.clone())
}

/// Checks, before any work is written, that `path` (named by `flag` on the command line)
/// is not one of the inputs read so far.
pub fn check_output(flag: &str, path: &Path) -> Result<()> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    if let Some(input) = clobbered_input(path) {
        let same = if input == path.display().to_string() {
            String::new()
        } else {
            format!(" (`{input}`)")
        };
        return Err(miette!(
            help = "choose another output file: polyc never writes over one of its inputs",
            "{flag} {}: this is an input file{same}, and writing there would destroy it",
            path.display()
        ));
    }
    Ok(())
}

/// Writes `bytes` to `path` (named by `flag`), or to standard output when `path` is `-`.
///
/// Refuses to overwrite an input. A regular file is written to a temporary file in the
/// same folder and renamed over `path`, so that it is either the old or the whole new
/// file; a special file (a device, a FIFO) is written in place.
pub fn write_output(flag: &str, path: &Path, bytes: &[u8]) -> Result<()> {
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        return out
            .write_all(bytes)
            .and_then(|_| out.flush())
            .map_err(|e| miette!("{flag} -: cannot write standard output: {e}"));
    }
    check_output(flag, path)?;
    let cannot = |e: std::io::Error| {
        miette!(
            help = "check that the folder exists and is writable",
            "{flag} {}: cannot write: {e}",
            path.display()
        )
    };
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(miette!(
                help = "give a file name, not a folder",
                "{flag} {}: is a directory",
                path.display()
            ))
        }
        Ok(m) if !m.is_file() => return std::fs::write(path, bytes).map_err(cannot),
        _ => {}
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.polyc-{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        // Keep the mode of a file being replaced.
        if let Ok(m) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, m.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(cannot(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_is_never_overwritten() {
        let dir = std::env::temp_dir().join(format!("polyc-files-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prog = dir.join("p.tc");
        std::fs::write(&prog, "def f() {}").unwrap();
        let text = read_text_input(prog.to_str().unwrap()).unwrap();
        assert_eq!(text, b"def f() {}");
        let err = write_output("-o", &prog, b"int x;").unwrap_err();
        assert!(err.to_string().contains("this is an input file"), "{err}");
        assert_eq!(std::fs::read(&prog).unwrap(), b"def f() {}");
        // Through another name for the same file (a hard link) too.
        let link = dir.join("q.tc");
        std::fs::hard_link(&prog, &link).unwrap();
        assert!(write_output("-o", &link, b"x").is_err());
        // Another file is written whole, and no temporary is left.
        let out = dir.join("p.c");
        write_output("-o", &out, b"int x;").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"int x;");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("polyc-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn oversized_inputs_are_refused() {
        let err = read_capped("/dev/zero", 1 << 20, "text input").unwrap_err();
        assert_eq!(err.to_string(), "`/dev/zero` is larger than 1 MiB");
    }
}
