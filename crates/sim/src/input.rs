//! Reading the files a user gives nssim (scenarios, trace files, shard
//! outputs, a program's printed output): bounded, and never waiting.
//!
//! Only a regular file is read: a FIFO would block the open until a
//! writer came, and a device such as `/dev/zero` never ends. Its size is
//! checked before it is read, and the read stops one byte past the limit
//! (a file that grows meanwhile), so no input makes the process hold more
//! than the limit; the buffer is reserved with `try_reserve`, so a machine
//! short of memory gives an error rather than an abort. The limit is
//! [`DEFAULT_MAX_INPUT`], or the environment's `NSSIM_MAX_INPUT` (bytes,
//! or with a `k`, `m` or `g` suffix).

use std::io::Read;
use std::path::Path;

/// The most bytes an input file may have unless `NSSIM_MAX_INPUT` says
/// otherwise: 64 MiB, far past any scenario or trace file of the library.
pub const DEFAULT_MAX_INPUT: u64 = 64 << 20;

/// The environment variable that overrides [`DEFAULT_MAX_INPUT`].
pub const MAX_INPUT_VAR: &str = "NSSIM_MAX_INPUT";

/// The input limit in force: `NSSIM_MAX_INPUT` when set, else the default.
/// A value that is not a size is an error naming it.
pub fn max_input() -> Result<u64, String> {
    let Ok(text) = std::env::var(MAX_INPUT_VAR) else {
        return Ok(DEFAULT_MAX_INPUT);
    };
    parse_size(&text).ok_or_else(|| {
        format!(
            "{MAX_INPUT_VAR}={} is not a size such as 1048576, 64m or 1g",
            crate::echo::echo(&text)
        )
    })
}

fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let (num, mult) = match t.char_indices().last()? {
        (i, 'k') => (&t[..i], 1 << 10),
        (i, 'm') => (&t[..i], 1 << 20),
        (i, 'g') => (&t[..i], 1 << 30),
        _ => (t.as_str(), 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// The bytes of the regular file at `path`, at most [`max_input`] of
/// them. The error says what is wrong, without the path (the caller
/// names it as its messages do).
pub fn read_input(path: &Path) -> Result<Vec<u8>, String> {
    let max = max_input()?;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, a device or a socket): only files are read, so that nothing waits for a writer or reads without end"
        };
        return Err(what.to_string());
    }
    let too_big = |len: u64| {
        format!("{len} bytes or more, past the limit of {max} bytes on an input file (set {MAX_INPUT_VAR} to raise it)")
    };
    if meta.len() > max {
        return Err(too_big(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    buf.try_reserve_exact(meta.len() as usize)
        .map_err(|_| format!("no memory for its {} bytes", meta.len()))?;
    file.take(max.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    if buf.len() as u64 > max {
        return Err(too_big(buf.len() as u64));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_bytes_with_binary_suffixes() {
        assert_eq!(parse_size("1048576"), Some(1 << 20));
        assert_eq!(parse_size("64m"), Some(64 << 20));
        assert_eq!(parse_size(" 2G "), Some(2 << 30));
        assert_eq!(parse_size("1k"), Some(1024));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("99999999999999999999g"), None);
    }

    #[test]
    fn a_device_and_a_directory_are_refused_without_reading() {
        let dev = read_input(Path::new("/dev/zero")).unwrap_err();
        assert!(dev.contains("not a regular file"), "{dev}");
        let dir = read_input(Path::new("/")).unwrap_err();
        assert!(dir.contains("a directory"), "{dir}");
    }
}
