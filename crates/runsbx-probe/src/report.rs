//! The result of one check and its JSON line.
//!
//! Hand-written JSON (no serde): the probe depends on `libc` only, so it shares no code, and so no bug, with the
//! runtime it checks.

use std::fmt::Write as _;

/// A JSON value, enough for the `data` field of the informational checks.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn str(s: impl Into<String>) -> Json {
        Json::Str(s.into())
    }

    pub fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Json::Str(s) => write_str(out, s),
            Json::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Obj(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, k);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// What one check did. `ok` means the operation succeeded; whether that is an escape is for the caller to judge.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub ok: bool,
    /// errno of the failing step, if any.
    pub errno: Option<i32>,
    /// Return value of the last syscall (or a count, or -1 on failure).
    pub ret: i64,
    /// Human-readable: which step failed, or what was seen.
    pub detail: String,
    /// Set when the check was interrupted by a signal it caught (SIGSYS from a seccomp RET_TRAP filter).
    pub signal: Option<&'static str>,
    /// Structured output of the informational checks (`ids`, `env`, `fds`, ...).
    pub data: Option<Json>,
}

impl Outcome {
    pub fn ok(ret: i64, detail: impl Into<String>) -> Outcome {
        Outcome {
            ok: true,
            errno: None,
            ret,
            detail: detail.into(),
            signal: None,
            data: None,
        }
    }

    pub fn fail(errno: i32, detail: impl Into<String>) -> Outcome {
        Outcome {
            ok: false,
            errno: Some(errno),
            ret: -1,
            detail: detail.into(),
            signal: None,
            data: None,
        }
    }

    /// A failure that has no errno (a timeout we chose, a short read, ...).
    pub fn refused(detail: impl Into<String>) -> Outcome {
        Outcome {
            ok: false,
            errno: None,
            ret: -1,
            detail: detail.into(),
            signal: None,
            data: None,
        }
    }

    pub fn with_data(mut self, data: Json) -> Outcome {
        self.data = Some(data);
        self
    }

    /// The output line, without the newline.
    pub fn to_json(&self, check: &str) -> String {
        let mut fields = vec![
            ("check".to_string(), Json::str(check)),
            ("ok".to_string(), Json::Bool(self.ok)),
            (
                "errno".to_string(),
                self.errno.map_or(Json::Null, |e| Json::str(errno_name(e))),
            ),
            ("ret".to_string(), Json::Int(self.ret)),
            ("detail".to_string(), Json::str(self.detail.clone())),
        ];
        if let Some(sig) = self.signal {
            fields.push(("signal".to_string(), Json::str(sig)));
        }
        if let Some(data) = &self.data {
            fields.push(("data".to_string(), data.clone()));
        }
        let mut out = String::new();
        Json::Obj(fields).write(&mut out);
        out
    }
}

/// errno of the last failed libc call; read it right after the call.
pub fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `Err(Outcome)` naming `step` if `ret` is negative, else `Ok(ret)`. Call it directly on the syscall's result,
/// before anything else can touch errno.
pub fn check_ret(step: &str, ret: i64) -> Result<i64, Outcome> {
    if ret < 0 {
        let e = last_errno();
        Err(Outcome::fail(e, format!("{step}: {}", strerror(e))))
    } else {
        Ok(ret)
    }
}

/// Maps an `io::Error` from std to an `Outcome` naming `step`.
pub fn io_step<T>(step: &str, r: std::io::Result<T>) -> Result<T, Outcome> {
    r.map_err(|e| match e.raw_os_error() {
        Some(n) => Outcome::fail(n, format!("{step}: {}", strerror(n))),
        None => Outcome::refused(format!("{step}: {e}")),
    })
}

pub fn strerror(e: i32) -> String {
    let s = std::io::Error::from_raw_os_error(e).to_string();
    // std appends " (os error N)"; the name is in the errno field already.
    match s.rfind(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

macro_rules! errno_table {
    ($($name:ident),* $(,)?) => {
        /// Every Linux errno by its canonical name; aliases (EWOULDBLOCK, EDEADLOCK, ENOTSUP) are left out.
        pub const ERRNOS: &[(i32, &str)] = &[$((libc::$name, stringify!($name))),*];
    };
}

errno_table!(
    EPERM,
    ENOENT,
    ESRCH,
    EINTR,
    EIO,
    ENXIO,
    E2BIG,
    ENOEXEC,
    EBADF,
    ECHILD,
    EAGAIN,
    ENOMEM,
    EACCES,
    EFAULT,
    ENOTBLK,
    EBUSY,
    EEXIST,
    EXDEV,
    ENODEV,
    ENOTDIR,
    EISDIR,
    EINVAL,
    ENFILE,
    EMFILE,
    ENOTTY,
    ETXTBSY,
    EFBIG,
    ENOSPC,
    ESPIPE,
    EROFS,
    EMLINK,
    EPIPE,
    EDOM,
    ERANGE,
    EDEADLK,
    ENAMETOOLONG,
    ENOLCK,
    ENOSYS,
    ENOTEMPTY,
    ELOOP,
    ENOMSG,
    EIDRM,
    ECHRNG,
    EL2NSYNC,
    EL3HLT,
    EL3RST,
    ELNRNG,
    EUNATCH,
    ENOCSI,
    EL2HLT,
    EBADE,
    EBADR,
    EXFULL,
    ENOANO,
    EBADRQC,
    EBADSLT,
    EBFONT,
    ENOSTR,
    ENODATA,
    ETIME,
    ENOSR,
    ENONET,
    ENOPKG,
    EREMOTE,
    ENOLINK,
    EADV,
    ESRMNT,
    ECOMM,
    EPROTO,
    EMULTIHOP,
    EDOTDOT,
    EBADMSG,
    EOVERFLOW,
    ENOTUNIQ,
    EBADFD,
    EREMCHG,
    ELIBACC,
    ELIBBAD,
    ELIBSCN,
    ELIBMAX,
    ELIBEXEC,
    EILSEQ,
    ERESTART,
    ESTRPIPE,
    EUSERS,
    ENOTSOCK,
    EDESTADDRREQ,
    EMSGSIZE,
    EPROTOTYPE,
    ENOPROTOOPT,
    EPROTONOSUPPORT,
    ESOCKTNOSUPPORT,
    EOPNOTSUPP,
    EPFNOSUPPORT,
    EAFNOSUPPORT,
    EADDRINUSE,
    EADDRNOTAVAIL,
    ENETDOWN,
    ENETUNREACH,
    ENETRESET,
    ECONNABORTED,
    ECONNRESET,
    ENOBUFS,
    EISCONN,
    ENOTCONN,
    ESHUTDOWN,
    ETOOMANYREFS,
    ETIMEDOUT,
    ECONNREFUSED,
    EHOSTDOWN,
    EHOSTUNREACH,
    EALREADY,
    EINPROGRESS,
    ESTALE,
    EUCLEAN,
    ENOTNAM,
    ENAVAIL,
    EISNAM,
    EREMOTEIO,
    EDQUOT,
    ENOMEDIUM,
    EMEDIUMTYPE,
    ECANCELED,
    ENOKEY,
    EKEYEXPIRED,
    EKEYREVOKED,
    EKEYREJECTED,
    EOWNERDEAD,
    ENOTRECOVERABLE,
    ERFKILL,
    EHWPOISON,
);

/// "EPERM" for 1; "E<n>" for a number Linux does not define.
pub fn errno_name(e: i32) -> String {
    ERRNOS
        .iter()
        .find(|(n, _)| *n == e)
        .map_or_else(|| format!("E{e}"), |(_, name)| (*name).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names() {
        assert_eq!(errno_name(libc::EPERM), "EPERM");
        assert_eq!(errno_name(libc::ENOSYS), "ENOSYS");
        assert_eq!(errno_name(libc::EAGAIN), "EAGAIN");
        assert_eq!(errno_name(libc::EOPNOTSUPP), "EOPNOTSUPP");
        assert_eq!(errno_name(9999), "E9999");
    }

    #[test]
    fn errno_table_has_no_duplicates_and_covers_1_to_133() {
        for e in 1..=133 {
            let count = ERRNOS.iter().filter(|(n, _)| *n == e).count();
            // 41 and 58 are unused on Linux (EWOULDBLOCK and EDEADLOCK are aliases).
            let expected = usize::from(e != 41 && e != 58);
            assert_eq!(count, expected, "errno {e}");
        }
    }

    #[test]
    fn json_line_shape() {
        let line =
            Outcome::fail(libc::EACCES, "open: Permission denied").to_json("read:/etc/shadow");
        assert_eq!(
            line,
            r#"{"check":"read:/etc/shadow","ok":false,"errno":"EACCES","ret":-1,"detail":"open: Permission denied"}"#
        );
        let line = Outcome::ok(3, "x")
            .with_data(Json::Arr(vec![Json::Int(1), Json::Null]))
            .to_json("pid");
        assert_eq!(
            line,
            r#"{"check":"pid","ok":true,"errno":null,"ret":3,"detail":"x","data":[1,null]}"#
        );
    }

    #[test]
    fn json_escapes() {
        let mut s = String::new();
        Json::str("a\"b\\c\n\u{1}\u{7f}é").write(&mut s);
        assert_eq!(s, r#""a\"b\\c\n\u0001\u007fé""#);
    }

    #[test]
    fn strerror_drops_os_error_suffix() {
        assert_eq!(strerror(libc::ENOENT), "No such file or directory");
    }
}
