//! Logging in runc's formats. containerd's shim and conmon read errors back
//! from the `--log` file, one JSON object a line with `level`, `msg`, `time`;
//! the text format is logrus's `time=... level=... msg=...`.
//!
//! Without `--debug`, only warnings and errors are kept, and libcontainer's
//! own events are dropped: they repeat, less clearly, the one error line
//! runsbx prints itself. Its errors still reach runsbx_runtime::initlog,
//! which is how that line names a mount that failed in init.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

use crate::cli::LogFormat;

enum Sink {
    File(Mutex<File>),
    Stderr,
}

pub struct Logger {
    sink: Sink,
    format: LogFormat,
    debug: bool,
}

impl Logger {
    fn write(&self, level: Level, msg: &str) {
        let line = format_line(self.format, level, msg);
        match &self.sink {
            Sink::File(f) => {
                if let Ok(mut f) = f.lock() {
                    let _ = f.write_all(line.as_bytes());
                }
            }
            Sink::Stderr => {
                let _ = std::io::stderr().write_all(line.as_bytes());
            }
        }
    }

    /// Records the final error of a command in the log file. Without a file
    /// the caller prints it to stderr itself, once.
    pub fn error(&self, msg: &str) {
        if matches!(self.sink, Sink::File(_)) {
            self.write(Level::ERROR, msg);
        }
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

pub fn format_line(format: LogFormat, level: Level, msg: &str) -> String {
    match format {
        LogFormat::Json => {
            let obj = serde_json::json!({ "level": level_name(level), "msg": msg, "time": now() });
            format!("{obj}\n")
        }
        LogFormat::Text => format!(
            "time={:?} level={} msg={:?}\n",
            now(),
            level_name(level),
            msg
        ),
    }
}

struct MessageVisitor(String);

impl Visit for MessageVisitor {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

/// libcontainer is built without libseccomp, so under `--debug` it warns
/// that it cannot load a filter whenever no_new_privileges is set; runsbx's
/// Executor loads the spec's filter itself (executor.rs), so the line would
/// say the opposite of what happens. Only that exact line is dropped.
fn misleads(target: &str, msg: &str) -> bool {
    target.starts_with("libcontainer")
        && msg == "seccomp not available, unable to set seccomp privileges!"
}

struct TracingLayer(&'static Logger);

impl TracingLayer {
    /// Events only (no span is ever shown); without `--debug`, runsbx's own
    /// warnings and errors only.
    fn shows(&self, meta: &Metadata<'_>) -> bool {
        meta.is_event()
            && (self.0.debug
                || (meta.target().starts_with("runsbx") && *meta.level() <= Level::WARN))
    }

    /// libcontainer's errors, shown or not, also go to
    /// runsbx_runtime::initlog: in its forked processes they are the only
    /// record of why a create failed (see initlog.rs).
    fn notes(meta: &Metadata<'_>) -> bool {
        meta.is_event()
            && *meta.level() == Level::ERROR
            && meta.target().starts_with("libcontainer")
    }

    fn wants(&self, meta: &Metadata<'_>) -> bool {
        self.shows(meta) || Self::notes(meta)
    }
}

// Filtering at the callsite, not in on_event: libcontainer's debug events
// and spans (hundreds a run, in each of its processes) then cost an atomic
// load instead of a dispatch.
impl<S: Subscriber> Layer<S> for TracingLayer {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        match self.wants(meta) {
            true => Interest::always(),
            false => Interest::never(),
        }
    }

    fn enabled(&self, meta: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        self.wants(meta)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(match self.0.debug {
            true => LevelFilter::TRACE,
            false => LevelFilter::WARN,
        })
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        let (shows, notes) = (self.shows(meta), Self::notes(meta));
        if !shows && !notes {
            return;
        }
        let mut v = MessageVisitor(String::new());
        event.record(&mut v);
        if misleads(meta.target(), v.0.trim()) {
            return;
        }
        if notes {
            runsbx_runtime::initlog::note(v.0.trim());
        }
        if shows {
            self.0.write(*meta.level(), v.0.trim());
        }
    }
}

/// Opens the log and installs it as the tracing subscriber. An unopenable
/// log file is an error: the shim would otherwise lose our messages.
pub fn init(
    path: Option<&Path>,
    format: LogFormat,
    debug: bool,
) -> std::io::Result<&'static Logger> {
    let sink = match path {
        Some(p) => Sink::File(Mutex::new(
            OpenOptions::new().create(true).append(true).open(p)?,
        )),
        None => Sink::Stderr,
    };
    let logger: &'static Logger = Box::leak(Box::new(Logger {
        sink,
        format,
        debug,
    }));
    let _ = tracing_subscriber::registry()
        .with(TracingLayer(logger))
        .try_init();
    Ok(logger)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_line_has_runc_fields() {
        let line = format_line(LogFormat::Json, Level::ERROR, "boom \"x\"");
        let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        assert_eq!(v["level"], "error");
        assert_eq!(v["msg"], "boom \"x\"");
        let t = v["time"].as_str().unwrap();
        assert_eq!(t.len(), "2026-11-29T09:00:00.000000000Z".len(), "{t}");
        assert!(t.ends_with('Z'));
    }

    #[test]
    fn only_libcontainers_seccomp_line_is_dropped() {
        let line = "seccomp not available, unable to set seccomp privileges!";
        assert!(misleads("libcontainer::process::init::process", line));
        assert!(!misleads("runsbx_runtime::executor", line));
        assert!(!misleads(
            "libcontainer::process::init::process",
            "seccomp not available, unable to enforce no_new_privileges!"
        ));
    }

    #[test]
    fn text_line_is_logfmt() {
        let line = format_line(LogFormat::Text, Level::WARN, "a b");
        assert!(line.contains("level=warning msg=\"a b\""), "{line}");
    }
}
