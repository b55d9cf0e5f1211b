//! Custom headers from tool parameters (2026-07-28, SEP-2243;
//! `basic/transports/streamable-http.mdx`, "Custom Headers from Tool
//! Parameters"): a tool's `inputSchema` may mark a property with
//! `"x-mcp-header": "Region"`; a client then mirrors that argument of every
//! `tools/call` as `Mcp-Param-Region`, so a proxy can route on it without
//! reading the body, and a server checks the header against the body, since
//! a proxy that routed on a header the body contradicts was lied to.
//!
//! Written once for the two cores and the monitor: what a tool's
//! annotations declare and why one is invalid ([`of_tool`]), the tools of a
//! listing that declare any ([`ToolHeaderTable`]), what an argument is sent
//! as ([`header_value`]) and whether a request's headers agree with its
//! arguments ([`ToolHeaderTable::check`]).
//!
//! An annotation is valid when its name is a non-empty HTTP token (RFC 9110
//! `tchar`s: no space, colon, control or non-ASCII character), unique in the
//! schema without regard to case, on a property of type `string`, `integer`
//! or `boolean` (not `number`: a float has no one decimal form), reached
//! from the schema's root through `properties` alone (never through
//! `items`, `$ref`, `allOf` and the like, whose value has no one place in
//! the arguments). A client must drop a tool with an invalid annotation
//! from what `tools/list` gives its application.

use crate::v2026::{decode_value, encode_value};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;

/// The annotation's key in a property's schema.
pub const ANNOTATION: &str = "x-mcp-header";

/// What every custom header's name starts with (lower-case, as the cores
/// keep header names).
pub const HEADER_PREFIX: &str = "mcp-param-";

/// Keywords whose values are data, not schemas: an `x-mcp-header` key
/// inside a `default` object is an argument's content, not an annotation.
const DATA_KEYWORDS: [&str; 4] = ["const", "default", "enum", "examples"];

/// One annotated parameter of a tool.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ParamHeader {
    /// The annotation's value, as the server spelled it (`Region`).
    pub name: String,
    /// The header as the cores name it: `mcp-param-` and the name, lower-case.
    pub header: String,
    /// The property names from the arguments' root to the parameter.
    pub path: Vec<String>,
    /// Its declared type.
    pub kind: ParamType,
}

/// The types a parameter with a custom header may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamType {
    /// `string`.
    String,
    /// `integer`.
    Integer,
    /// `boolean`.
    Boolean,
}

impl ParamHeader {
    /// The argument this parameter mirrors, in a call's `arguments`; `None`
    /// when absent.
    pub fn argument<'a>(&self, arguments: Option<&'a Value>) -> Option<&'a Value> {
        self.path
            .iter()
            .try_fold(arguments?, |v, key| v.as_object()?.get(key))
    }

    /// Bytes it keeps (its strings), for the bounds of a table.
    fn bytes(&self) -> usize {
        self.name.len() + self.header.len() + self.path.iter().map(String::len).sum::<usize>()
    }
}

/// Why a tool's annotations are invalid; the tool must not be offered.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum InvalidAnnotation {
    /// The annotation is not a string.
    NotAString {
        /// Where it is (a JSON pointer into `inputSchema`).
        at: String,
    },
    /// The annotation is empty.
    Empty {
        /// Where it is.
        at: String,
    },
    /// The name has a character an HTTP field name cannot have.
    NotAToken {
        /// The name.
        name: String,
    },
    /// Two annotations name one header (names compare without case).
    Duplicate {
        /// The second name.
        name: String,
    },
    /// The annotated property is not of type `string`, `integer` or `boolean`.
    NotPrimitive {
        /// The name.
        name: String,
        /// Its `type`, as the schema says it (`null` when it says none).
        kind: String,
    },
    /// The annotation is not on a property reached from the root through
    /// `properties` alone.
    Unreachable {
        /// Where it is.
        at: String,
    },
}

impl fmt::Display for InvalidAnnotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidAnnotation::NotAString { at } => write!(f, "x-mcp-header at {at} is not a string"),
            InvalidAnnotation::Empty { at } => write!(f, "x-mcp-header at {at} is empty"),
            InvalidAnnotation::NotAToken { name } => {
                write!(f, "x-mcp-header {name:?} is not an HTTP field name")
            }
            InvalidAnnotation::Duplicate { name } => {
                write!(f, "x-mcp-header {name:?} names a header another parameter names")
            }
            InvalidAnnotation::NotPrimitive { name, kind } => write!(
                f,
                "x-mcp-header {name:?} is on a parameter of type {kind}, not string, integer or boolean"
            ),
            InvalidAnnotation::Unreachable { at } => write!(
                f,
                "x-mcp-header at {at} is not on a property reached through properties alone"
            ),
        }
    }
}

/// The annotated parameters of `tool` (a `tools/list` entry), in the order
/// of its schema; an error when any annotation is invalid.
pub fn of_tool(tool: &Value) -> Result<Vec<ParamHeader>, InvalidAnnotation> {
    let mut out = Vec::new();
    if let Some(schema) = tool.get("inputSchema") {
        walk(schema, &mut Vec::new(), true, &mut String::new(), &mut out)?;
    }
    for (i, p) in out.iter().enumerate() {
        if out[..i].iter().any(|q| q.header == p.header) {
            return Err(InvalidAnnotation::Duplicate {
                name: p.name.clone(),
            });
        }
    }
    Ok(out)
}

/// Collects the annotations under `node`; `path` is the property chain to
/// it while it is `reachable` (through `properties` alone from the root).
fn walk(
    node: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    at: &mut String,
    out: &mut Vec<ParamHeader>,
) -> Result<(), InvalidAnnotation> {
    match node {
        Value::Object(map) => {
            if let Some(annotation) = map.get(ANNOTATION) {
                // The root is the arguments object itself, no parameter.
                if !reachable || path.is_empty() {
                    return Err(InvalidAnnotation::Unreachable { at: at.clone() });
                }
                out.push(annotated(annotation, map.get("type"), path, at)?);
            }
            for (key, value) in map {
                if key == ANNOTATION || DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                let mark = at.len();
                at.push('/');
                at.push_str(&pointer_token(key));
                match value {
                    Value::Object(properties) if key == "properties" => {
                        for (name, schema) in properties {
                            let inner = at.len();
                            at.push('/');
                            at.push_str(&pointer_token(name));
                            path.push(name.clone());
                            let r = walk(schema, path, reachable, at, out);
                            path.pop();
                            at.truncate(inner);
                            r?;
                        }
                    }
                    _ => walk(value, path, false, at, out)?,
                }
                at.truncate(mark);
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let mark = at.len();
                at.push_str(&format!("/{i}"));
                walk(item, path, false, at, out)?;
                at.truncate(mark);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A JSON pointer's token for `key` (RFC 6901: `~` and `/` escaped).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// One annotation on a reachable property, checked.
fn annotated(
    annotation: &Value,
    kind: Option<&Value>,
    path: &[String],
    at: &str,
) -> Result<ParamHeader, InvalidAnnotation> {
    let Value::String(name) = annotation else {
        return Err(InvalidAnnotation::NotAString { at: at.to_owned() });
    };
    if name.is_empty() {
        return Err(InvalidAnnotation::Empty { at: at.to_owned() });
    }
    if !name.bytes().all(is_tchar) {
        return Err(InvalidAnnotation::NotAToken { name: name.clone() });
    }
    let Some(param_type) = primitive(kind) else {
        return Err(InvalidAnnotation::NotPrimitive {
            name: name.clone(),
            kind: kind.map_or_else(|| "null".to_owned(), Value::to_string),
        });
    };
    Ok(ParamHeader {
        name: name.clone(),
        header: format!("{HEADER_PREFIX}{}", name.to_ascii_lowercase()),
        path: path.to_vec(),
        kind: param_type,
    })
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The parameter's type when `type` is one of `string`, `integer`,
/// `boolean`, alone or with `null` (an optional parameter: a null
/// argument sends no header).
fn primitive(kind: Option<&Value>) -> Option<ParamType> {
    let one = |t: &str| match t {
        "string" => Some(ParamType::String),
        "integer" => Some(ParamType::Integer),
        "boolean" => Some(ParamType::Boolean),
        _ => None,
    };
    match kind {
        Some(Value::String(t)) => one(t),
        Some(Value::Array(ts)) => {
            let mut found = None;
            for t in ts {
                match (t.as_str(), t.as_str().and_then(one)) {
                    (Some("null"), _) => {}
                    (_, Some(p)) if found.is_none() => found = Some(p),
                    _ => return None,
                }
            }
            found
        }
        _ => None,
    }
}

/// What argument `value` is sent as: a string as it is when plain visible
/// ASCII, else Base64 in its sentinel; an integer in decimal; a boolean as
/// `true` or `false`. `None` (no header) for `null` and for what no header
/// can carry (an object or an array, which a valid annotation never
/// declares: the server's own validation refuses such an argument).
pub fn header_value(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(encode_value(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(number_text(n)),
        _ => None,
    }
}

/// A number in decimal: an integral float without its `.0`.
fn number_text(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
            format!("{}", f as i64)
        }
        _ => n.to_string(),
    }
}

/// Whether a header's value, decoded, says what the argument says:
/// strings exactly, numbers by value (`42.0` is `42`), booleans as
/// `true` / `false`.
fn agrees(decoded: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => decoded == s,
        Value::Bool(b) => decoded == if *b { "true" } else { "false" },
        Value::Number(n) => match (decoded.parse::<i64>(), n.as_i64()) {
            (Ok(h), Some(b)) => h == b,
            _ => decoded
                .parse::<f64>()
                .ok()
                .zip(n.as_f64())
                .is_some_and(|(h, b)| h == b),
        },
        _ => false,
    }
}

/// The tools that declare custom headers, by name, as a listing declared
/// them; bounded in bytes (`bytes_max` on [`learn`](Self::learn): the
/// oldest tool is forgotten first, and a call of a forgotten tool goes out
/// without its headers, which a server refuses with -32020, asking for a
/// fresh listing).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolHeaderTable {
    tools: BTreeMap<String, Vec<ParamHeader>>,
    /// Tool names, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

impl ToolHeaderTable {
    /// The table of a `tools/list` result (or its `tools` array), and the
    /// tools it leaves out as invalid, with why.
    pub fn from_list(list: &Value) -> (Self, Vec<(String, InvalidAnnotation)>) {
        let mut table = ToolHeaderTable::default();
        let mut invalid = Vec::new();
        for tool in tools_of(list) {
            if let Err(e) = table.learn(tool, usize::MAX) {
                invalid.push(e);
            }
        }
        (table, invalid)
    }

    /// Takes in one tool of a listing: its annotated parameters replace
    /// whatever was known of it; a tool with an invalid annotation is
    /// forgotten and returned with why, by name.
    pub fn learn(
        &mut self,
        tool: &Value,
        bytes_max: usize,
    ) -> Result<(), (String, InvalidAnnotation)> {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.forget(&name);
        let params = of_tool(tool).map_err(|e| (name.clone(), e))?;
        if params.is_empty() {
            return Ok(());
        }
        let bytes = name.len() + params.iter().map(ParamHeader::bytes).sum::<usize>();
        if bytes > bytes_max {
            return Ok(());
        }
        while self.bytes + bytes > bytes_max {
            let Some(oldest) = self.order.front().cloned() else {
                break;
            };
            self.forget(&oldest);
        }
        self.bytes += bytes;
        self.order.push_back(name.clone());
        self.tools.insert(name, params);
        Ok(())
    }

    fn forget(&mut self, name: &str) {
        if let Some(params) = self.tools.remove(name) {
            self.bytes -= name.len() + params.iter().map(ParamHeader::bytes).sum::<usize>();
            self.order.retain(|n| n != name);
        }
    }

    /// The annotated parameters of tool `name`, if it declares any.
    pub fn get(&self, name: &str) -> Option<&[ParamHeader]> {
        self.tools.get(name).map(Vec::as_slice)
    }

    /// Whether no tool declares a header.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Bytes the table keeps.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The headers a `tools/call` of `tool` with `arguments` carries (name
    /// as the server spelled it after `Mcp-Param-`, value encoded).
    pub fn headers_for(&self, tool: &str, arguments: Option<&Value>) -> Vec<(String, String)> {
        let Some(params) = self.get(tool) else {
            return Vec::new();
        };
        params
            .iter()
            .filter_map(|p| {
                let value = header_value(p.argument(arguments)?)?;
                Some((format!("Mcp-Param-{}", p.name), value))
            })
            .collect()
    }

    /// Whether a `tools/call` of `tool` with `arguments` carries the
    /// headers its parameters declare, `header` giving a header's first
    /// value by name: each present and, decoded, saying what its argument
    /// says when the argument is there (and not `null`), absent when it is
    /// not. Why not, otherwise.
    pub fn check<'h>(
        &self,
        tool: &str,
        arguments: Option<&Value>,
        header: impl Fn(&str) -> Option<&'h str>,
    ) -> Result<(), String> {
        let Some(params) = self.get(tool) else {
            return Ok(());
        };
        for p in params {
            let value = p.argument(arguments).filter(|v| !v.is_null());
            let sent = header(&p.header);
            match (value, sent) {
                (None, None) => {}
                (Some(_), None) => {
                    return Err(format!(
                        "Mcp-Param-{} missing, and the argument is there",
                        p.name
                    ))
                }
                (None, Some(h)) => {
                    return Err(format!(
                        "Mcp-Param-{} is {h:?}, and the argument is not there",
                        p.name
                    ))
                }
                (Some(v), Some(h)) => {
                    let h = h.trim_matches([' ', '\t']);
                    if h.chars().any(char::is_control) {
                        return Err(format!("Mcp-Param-{} has control characters", p.name));
                    }
                    let decoded = decode_value(h).ok_or_else(|| {
                        format!("Mcp-Param-{} {h:?} is not valid Base64 of UTF-8", p.name)
                    })?;
                    if !agrees(&decoded, v) {
                        return Err(format!(
                            "Mcp-Param-{} says {decoded:?} but the argument is {v}",
                            p.name
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The tools of a `tools/list` result, or of its `tools` array.
pub fn tools_of(list: &Value) -> impl Iterator<Item = &Value> {
    list.get("tools")
        .unwrap_or(list)
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
}

/// The first `Mcp-*` header name (lower-case) that `names` repeats, without
/// regard to case: a repeated header is ambiguous (which value did a proxy
/// route on?), so a request repeating one is refused, never served by its
/// first value.
pub fn repeated_mcp_header<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for name in names {
        if !crate::headers::is_mcp(name) {
            continue;
        }
        if seen.iter().any(|s| s.eq_ignore_ascii_case(name)) {
            return Some(name.to_ascii_lowercase());
        }
        seen.push(name);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(properties: Value) -> Value {
        json!({"name": "t", "inputSchema": {"type": "object", "properties": properties}})
    }

    #[test]
    fn valid_annotations_are_found_at_their_paths() {
        let t = tool(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": ["integer", "null"], "x-mcp-header": "N"},
            "query": {"type": "string"},
            "nested": {"type": "object", "properties": {
                "flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
            "d": {"type": "string", "default": {"x-mcp-header": "data, not an annotation"}}
        }));
        let params = of_tool(&t).unwrap();
        let mut got: Vec<(&str, &str, Vec<&str>)> = params
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.header.as_str(),
                    p.path.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("Flag", "mcp-param-flag", vec!["nested", "flag"]),
                ("N", "mcp-param-n", vec!["n"]),
                ("Region", "mcp-param-region", vec!["region"]),
            ]
        );
        let kinds: Vec<(&str, ParamType)> =
            params.iter().map(|p| (p.name.as_str(), p.kind)).collect();
        for (name, kind) in [
            ("Region", ParamType::String),
            ("N", ParamType::Integer),
            ("Flag", ParamType::Boolean),
        ] {
            assert!(kinds.contains(&(name, kind)), "{name}: {kinds:?}");
        }
    }

    /// Each way an annotation is invalid, as the SEP lists them.
    #[test]
    fn each_invalid_annotation_is_named() {
        let bad = |props: Value| of_tool(&tool(props)).unwrap_err();
        let s = |h: &str| json!({"type": "string", "x-mcp-header": h});
        assert!(matches!(
            bad(json!({"v": s("")})),
            InvalidAnnotation::Empty { .. }
        ));
        for name in [
            "My Region",
            "Region:Primary",
            "Région",
            "Region\t1",
            "a\r\nb",
        ] {
            assert!(
                matches!(
                    bad(json!({"v": s(name)})),
                    InvalidAnnotation::NotAToken { .. }
                ),
                "{name:?}"
            );
        }
        assert!(matches!(
            bad(json!({"a": s("Region"), "b": s("Region")})),
            InvalidAnnotation::Duplicate { .. }
        ));
        assert!(matches!(
            bad(json!({"a": s("MyField"), "b": s("myfield")})),
            InvalidAnnotation::Duplicate { .. }
        ));
        for kind in [
            json!("number"),
            json!("object"),
            json!("array"),
            json!("null"),
            json!(["string", "integer"]),
        ] {
            assert!(
                matches!(
                    bad(json!({"v": {"type": kind, "x-mcp-header": "V"}})),
                    InvalidAnnotation::NotPrimitive { .. }
                ),
                "{kind}"
            );
        }
        assert!(matches!(
            bad(json!({"v": {"type": "string", "x-mcp-header": 7}})),
            InvalidAnnotation::NotAString { .. }
        ));
        // Reached through items, a composition, a $defs: no one place in the arguments.
        let items = json!({"l": {"type": "array", "items": s("Item")}});
        let any_of = json!({"u": {"anyOf": [s("U")]}});
        assert!(
            matches!(bad(items), InvalidAnnotation::Unreachable { at } if at == "/properties/l/items")
        );
        assert!(matches!(bad(any_of), InvalidAnnotation::Unreachable { .. }));
        let defs = json!({"name": "t", "inputSchema": {"type": "object",
            "$defs": {"x": {"type": "object", "properties": {"v": s("V")}}}}});
        assert!(matches!(
            of_tool(&defs),
            Err(InvalidAnnotation::Unreachable { .. })
        ));
    }

    #[test]
    fn values_are_sent_plain_only_when_a_header_carries_them_as_they_are() {
        for (v, sent) in [
            (json!("us-west1"), "us-west1"),
            (json!("us west 1"), "us west 1"),
            (json!(42), "42"),
            (json!(-7), "-7"),
            (json!(42.0), "42"),
            (json!(true), "true"),
            (json!(false), "false"),
            (json!("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (json!(" padded "), "=?base64?IHBhZGRlZCA=?="),
            (json!("line1\r\nline2"), "=?base64?bGluZTENCmxpbmUy?="),
            (json!("\tindented"), "=?base64?CWluZGVudGVk?="),
            (
                json!("=?base64?literal?="),
                "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
            ),
        ] {
            assert_eq!(header_value(&v).as_deref(), Some(sent), "{v}");
        }
        assert_eq!(header_value(&json!(null)), None);
        assert_eq!(header_value(&json!({"a": 1})), None);
    }

    #[test]
    fn a_call_agrees_with_its_headers_or_says_why_not() {
        let t = tool(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
        }));
        let (table, invalid) = ToolHeaderTable::from_list(&json!({"tools": [t]}));
        assert!(invalid.is_empty());
        let args = json!({"region": "Hello", "priority": 42});
        let mut sent = table.headers_for("t", Some(&args));
        sent.sort();
        assert_eq!(
            sent,
            vec![
                ("Mcp-Param-Priority".to_owned(), "42".to_owned()),
                ("Mcp-Param-Region".to_owned(), "Hello".to_owned())
            ]
        );
        let check = |pairs: &[(&str, &str)], args: &Value| {
            table.check("t", Some(args), |name| {
                pairs
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| *v)
            })
        };
        let region = "Mcp-Param-Region";
        let priority = "Mcp-Param-Priority";
        assert_eq!(check(&[(region, "Hello"), (priority, "42")], &args), Ok(()));
        assert_eq!(
            check(
                &[(region, "=?base64?SGVsbG8=?="), (priority, "42.0")],
                &args
            ),
            Ok(())
        );
        assert_eq!(
            check(&[(region, "  Hello "), (priority, "42")], &args),
            Ok(())
        );
        // Literal when not exactly the sentinel.
        let literal = json!({"region": "=?base64?SGVsbG8=", "priority": 42});
        assert_eq!(
            check(&[(region, "=?base64?SGVsbG8="), (priority, "42")], &literal),
            Ok(())
        );
        for bad in [
            "=?base64?SGVsbG8?=",
            "=?base64?SGVs!!!bG8=?=",
            "hello",
            "Hello\u{1}",
        ] {
            assert!(
                check(&[(region, bad), (priority, "42")], &args).is_err(),
                "{bad:?}"
            );
        }
        assert!(
            check(&[(priority, "42")], &args).is_err(),
            "a header missing"
        );
        assert!(check(&[(region, "Hello"), (priority, "43")], &args).is_err());
        let no_priority = json!({"region": "Hello", "priority": null});
        assert_eq!(check(&[(region, "Hello")], &no_priority), Ok(()));
        assert!(check(&[(region, "Hello"), (priority, "1")], &no_priority).is_err());
        // A tool that declares none is not checked.
        assert_eq!(table.check("other", Some(&args), |_| None), Ok(()));
    }

    #[test]
    fn a_table_keeps_its_byte_bound_by_forgetting_the_oldest() {
        let named = |name: &str| {
            json!({"name": name, "inputSchema": {"type": "object",
                "properties": {"r": {"type": "string", "x-mcp-header": "Region"}}}})
        };
        let mut table = ToolHeaderTable::default();
        table.learn(&named("a"), 1000).unwrap();
        let one = table.bytes();
        table.learn(&named("b"), 2 * one).unwrap();
        table.learn(&named("c"), 2 * one).unwrap();
        assert!(table.get("a").is_none() && table.get("b").is_some() && table.get("c").is_some());
        assert_eq!(table.bytes(), 2 * one);
        // Listed again without annotations: forgotten.
        table
            .learn(
                &json!({"name": "b", "inputSchema": {"type": "object"}}),
                2 * one,
            )
            .unwrap();
        assert!(table.get("b").is_none());
        assert_eq!(table.bytes(), one);
        let err = table.learn(
            &json!({"name": "c", "inputSchema": {"type": "object",
            "properties": {"r": {"type": "number", "x-mcp-header": "R"}}}}),
            2 * one,
        );
        assert!(matches!(err, Err((n, InvalidAnnotation::NotPrimitive { .. })) if n == "c"));
        assert!(table.is_empty() && table.bytes() == 0);
    }

    #[test]
    fn repeated_mcp_headers_are_found_without_regard_to_case() {
        assert_eq!(
            repeated_mcp_header(["mcp-method", "host", "mcp-name"]),
            None
        );
        assert_eq!(
            repeated_mcp_header(["mcp-param-region", "accept", "Mcp-Param-Region"]).as_deref(),
            Some("mcp-param-region")
        );
        assert_eq!(repeated_mcp_header(["accept", "accept"]), None);
    }
}
