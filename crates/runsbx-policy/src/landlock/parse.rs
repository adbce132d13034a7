//! The JSON form of a policy: runtime-spec PR #1241's `process.landlock`
//! object plus `scoped`, read from the raw config.json (oci-spec drops fields
//! it does not know) or from the annotation [`ANNOTATION`].
//!
//! Parsing is strict: an unknown key, an unknown right or a value of the wrong
//! type is an error naming the field, never skipped. A skipped key in a
//! grant-list would be harmless, but a misspelt `handledAccessFS` would turn
//! the whole filesystem policy off.
use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::{
    FsRight, LandlockError, LandlockPolicy, NetPortRule, NetRight, PathBeneathRule, ScopeRight,
};

/// The annotation that carries a policy for engines that cannot write
/// `process.landlock`: the same JSON object, as a string.
pub const ANNOTATION: &str = "run.sbx.landlock";

/// Reads a bundle's policy from its raw config.json: `process.landlock`, or
/// the annotation [`ANNOTATION`]. `Ok(None)` when neither is set (or
/// `process.landlock` is `null`).
///
/// When both are set they must describe the same policy, or this is
/// [`LandlockError::Conflict`]: they come from the same author, so a
/// difference is a mistake, and picking one would silently drop the other.
/// (Layering an operator policy over the bundle's is a different matter,
/// see [`super::LandlockDefault::layers`].)
pub fn from_config(raw: &Value) -> Result<Option<LandlockPolicy>, LandlockError> {
    let in_process = match raw.get("process").and_then(|p| p.get("landlock")) {
        None | Some(Value::Null) => None,
        Some(value) => Some(policy(value, "process.landlock")?),
    };
    let field = format!("annotations[\"{ANNOTATION}\"]");
    let in_annotation = match raw.get("annotations").and_then(|a| a.get(ANNOTATION)) {
        None => None,
        Some(Value::String(text)) => {
            let value: Value = serde_json::from_str(text)
                .map_err(|e| LandlockError::invalid(&field, format!("not JSON: {e}")))?;
            Some(policy(&value, &field)?)
        }
        Some(other) => return Err(LandlockError::invalid(&field, expected("a string", other))),
    };
    match (in_process, in_annotation) {
        (Some(a), Some(b)) if a != b => Err(LandlockError::Conflict),
        (Some(p), _) | (None, Some(p)) => Ok(Some(p)),
        (None, None) => Ok(None),
    }
}

/// Parses and validates one `process.landlock` object; `source` prefixes field names.
pub(super) fn policy(value: &Value, source: &str) -> Result<LandlockPolicy, LandlockError> {
    let top = object(
        value,
        source,
        &["handledAccess", "rules", "scoped", "enableBestEffort"],
    )?;
    let mut policy = LandlockPolicy {
        handled_fs: BTreeSet::new(),
        handled_net: BTreeSet::new(),
        scoped: BTreeSet::new(),
        path_beneath: Vec::new(),
        net_port: Vec::new(),
        best_effort: false,
    };
    if let Some(handled) = top.get("handledAccess") {
        let field = format!("{source}.handledAccess");
        let handled = object(
            handled,
            &field,
            &["handledAccessFS", "handledAccessNetwork"],
        )?;
        if let Some(v) = handled.get("handledAccessFS") {
            policy.handled_fs = names(v, &format!("{field}.handledAccessFS"), FsRight::from_name)?;
        }
        if let Some(v) = handled.get("handledAccessNetwork") {
            policy.handled_net = names(
                v,
                &format!("{field}.handledAccessNetwork"),
                NetRight::from_name,
            )?;
        }
    }
    if let Some(v) = top.get("scoped") {
        policy.scoped = names(v, &format!("{source}.scoped"), ScopeRight::from_name)?;
    }
    if let Some(v) = top.get("enableBestEffort") {
        policy.best_effort = v.as_bool().ok_or_else(|| {
            LandlockError::invalid(
                format!("{source}.enableBestEffort"),
                expected("a boolean", v),
            )
        })?;
    }
    if let Some(rules) = top.get("rules") {
        let field = format!("{source}.rules");
        let rules = object(rules, &field, &["pathBeneath", "networkPort"])?;
        if let Some(v) = rules.get("pathBeneath") {
            for (i, rule) in array(v, &format!("{field}.pathBeneath"))?
                .iter()
                .enumerate()
            {
                policy
                    .path_beneath
                    .push(path_beneath(rule, &format!("{field}.pathBeneath[{i}]"))?);
            }
        }
        if let Some(v) = rules.get("networkPort") {
            for (i, rule) in array(v, &format!("{field}.networkPort"))?
                .iter()
                .enumerate()
            {
                policy
                    .net_port
                    .push(network_port(rule, &format!("{field}.networkPort[{i}]"))?);
            }
        }
    }
    // Cross-field checks name fields relative to the policy; add the source.
    policy.validate().map_err(|e| match e {
        LandlockError::Invalid { field, problem } => {
            LandlockError::invalid(format!("{source}.{field}"), problem)
        }
        other => other,
    })?;
    Ok(policy)
}

fn path_beneath(value: &Value, field: &str) -> Result<PathBeneathRule, LandlockError> {
    let rule = object(value, field, &["allowedAccess", "paths"])?;
    let allowed = required(rule, field, "allowedAccess")?;
    let allowed = names(
        allowed,
        &format!("{field}.allowedAccess"),
        FsRight::from_name,
    )?;
    let paths_field = format!("{field}.paths");
    let mut paths = Vec::new();
    for (j, p) in array(required(rule, field, "paths")?, &paths_field)?
        .iter()
        .enumerate()
    {
        let text = p.as_str().ok_or_else(|| {
            LandlockError::invalid(format!("{paths_field}[{j}]"), expected("a string", p))
        })?;
        paths.push(PathBuf::from(text));
    }
    Ok(PathBeneathRule { allowed, paths })
}

fn network_port(value: &Value, field: &str) -> Result<NetPortRule, LandlockError> {
    let rule = object(value, field, &["allowedAccess", "ports"])?;
    let allowed = required(rule, field, "allowedAccess")?;
    let allowed = names(
        allowed,
        &format!("{field}.allowedAccess"),
        NetRight::from_name,
    )?;
    let ports_field = format!("{field}.ports");
    let mut ports = Vec::new();
    for (j, p) in array(required(rule, field, "ports")?, &ports_field)?
        .iter()
        .enumerate()
    {
        let port = match p.as_i64() {
            Some(n) => u16::try_from(n).map_err(|_| {
                LandlockError::invalid(
                    format!("{ports_field}[{j}]"),
                    format!("port {n} out of range 0-65535"),
                )
            })?,
            // A u64 beyond i64, a float or a non-number.
            None if p.is_number() => {
                return Err(LandlockError::invalid(
                    format!("{ports_field}[{j}]"),
                    format!("port {p} is not an integer in 0-65535"),
                ))
            }
            None => {
                return Err(LandlockError::invalid(
                    format!("{ports_field}[{j}]"),
                    expected("an integer port", p),
                ))
            }
        };
        ports.push(port);
    }
    Ok(NetPortRule { allowed, ports })
}

/// `value` as an object whose keys are all in `known`.
fn object<'a>(
    value: &'a Value,
    field: &str,
    known: &[&str],
) -> Result<&'a Map<String, Value>, LandlockError> {
    let map = value
        .as_object()
        .ok_or_else(|| LandlockError::invalid(field, expected("an object", value)))?;
    if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(LandlockError::invalid(
            field,
            format!("unknown field \"{key}\" (known: {})", known.join(", ")),
        ));
    }
    Ok(map)
}

fn required<'a>(
    map: &'a Map<String, Value>,
    field: &str,
    key: &str,
) -> Result<&'a Value, LandlockError> {
    map.get(key)
        .ok_or_else(|| LandlockError::invalid(format!("{field}.{key}"), "missing"))
}

fn array<'a>(value: &'a Value, field: &str) -> Result<&'a Vec<Value>, LandlockError> {
    value
        .as_array()
        .ok_or_else(|| LandlockError::invalid(field, expected("an array", value)))
}

/// An array of names, each known to `parse`. Repeated names are accepted once.
fn names<T: Ord>(
    value: &Value,
    field: &str,
    parse: fn(&str) -> Option<T>,
) -> Result<BTreeSet<T>, LandlockError> {
    let mut out = BTreeSet::new();
    for v in array(value, field)? {
        let text = v
            .as_str()
            .ok_or_else(|| LandlockError::invalid(field, expected("an array of strings", v)))?;
        let item = parse(text).ok_or_else(|| {
            let what = if field.ends_with("scoped") {
                "scope"
            } else {
                "right"
            };
            LandlockError::invalid(
                field,
                format!("unknown {what} \"{}\"", text.escape_default()),
            )
        })?;
        out.insert(item);
    }
    Ok(out)
}

/// "expected X, found <JSON type>".
fn expected(what: &str, found: &Value) -> String {
    let kind = match found {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("expected {what}, found {kind}")
}

pub(super) fn to_json(policy: &LandlockPolicy) -> Value {
    fn list<T: std::fmt::Display>(set: &BTreeSet<T>) -> Value {
        set.iter().map(|r| Value::String(r.to_string())).collect()
    }
    let mut handled = Map::new();
    handled.insert("handledAccessFS".into(), list(&policy.handled_fs));
    if !policy.handled_net.is_empty() {
        handled.insert("handledAccessNetwork".into(), list(&policy.handled_net));
    }
    let mut rules = Map::new();
    let path_beneath: Vec<Value> = policy
        .path_beneath
        .iter()
        .map(|r| {
            let paths: Vec<Value> = r
                .paths
                .iter()
                .map(|p| Value::String(p.to_string_lossy().into_owned()))
                .collect();
            json!({ "allowedAccess": list(&r.allowed), "paths": paths })
        })
        .collect();
    rules.insert("pathBeneath".into(), Value::Array(path_beneath));
    if !policy.net_port.is_empty() {
        let net_port: Vec<Value> = policy
            .net_port
            .iter()
            .map(|r| json!({ "allowedAccess": list(&r.allowed), "ports": r.ports }))
            .collect();
        rules.insert("networkPort".into(), Value::Array(net_port));
    }
    let mut top = Map::new();
    top.insert("handledAccess".into(), Value::Object(handled));
    top.insert("rules".into(), Value::Object(rules));
    if !policy.scoped.is_empty() {
        top.insert("scoped".into(), list(&policy.scoped));
    }
    top.insert("enableBestEffort".into(), Value::Bool(policy.best_effort));
    Value::Object(top)
}
