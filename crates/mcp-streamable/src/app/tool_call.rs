//! A `tools/call`'s params read where they lie, and a text result written
//! straight: the request path of every tool, not only the fast ones.
//!
//! The params are borrowed from the request's raw JSON: the tool's name,
//! its `arguments` and `_meta` stay raw text until a tool reads them, in its
//! own shape ([`Arguments::read`]) or as a tree ([`Arguments::value`]) when
//! it reads them loosely. No `Value` tree of the whole params is built, and
//! nothing is copied twice.

use crate::jsonrpc::RawJson;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

/// `tools/call`'s params: `{"name": string, "arguments"?: object,
/// "_meta"?: object}`; other members are ignored.
#[derive(Debug, Deserialize)]
pub struct ToolCall<'a> {
    /// Borrowed unless the client escaped a character in it.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// The tool's arguments, unread.
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    /// The request's `_meta` (the progress token lives here), unread.
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<&'a RawValue>,
}

impl<'a> ToolCall<'a> {
    /// Reads params; `None` when they are not of the shape above (no name,
    /// a name that is not a string, not an object): the request is
    /// malformed, whatever the tool.
    pub fn parse(params: Option<&'a RawJson>) -> Option<Self> {
        object(params?.as_str()).and_then(|text| serde_json::from_str(text).ok())
    }

    /// The tool's arguments.
    pub fn arguments(&self) -> Arguments<'a> {
        Arguments(self.arguments)
    }

    /// The request's `_meta`.
    pub fn meta(&self) -> Arguments<'a> {
        Arguments(self.meta)
    }
}

/// A member of a tool call still as the client sent it (absent or `null`:
/// none; any other JSON: each tool decides what its shape means to it).
#[derive(Clone, Copy, Debug)]
pub struct Arguments<'a>(Option<&'a RawValue>);

impl<'a> Arguments<'a> {
    /// No arguments (a call that sent none).
    pub const NONE: Arguments<'static> = Arguments(None);

    /// Arguments given as raw JSON (an embedding that holds them so).
    pub fn of(raw: &'a RawJson) -> Self {
        // A `RawJson` is one valid JSON value by construction.
        Arguments(serde_json::from_str(raw.as_str()).ok())
    }

    /// Read in a tool's own shape, borrowing what it can; `None` when absent,
    /// not an object (the spec's arguments are one), or of another shape.
    pub fn read<T: Deserialize<'a>>(self) -> Option<T> {
        object(self.0?.get()).and_then(|text| serde_json::from_str(text).ok())
    }

    /// As a tree, for tools that read their arguments loosely: `{}` when
    /// absent.
    pub fn value(self) -> Value {
        self.0
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_else(|| Value::Object(Default::default()))
    }
}

/// `text` if it is a JSON object: serde reads a struct from an array too
/// (by position), which MCP's params and arguments never are.
fn object(text: &str) -> Option<&str> {
    text.trim_start().starts_with('{').then_some(text)
}

/// A tool result of one text content, `{"content": [{"text": t, "type":
/// "text"}]}`, serialized from borrowed text without a tree (keys in the
/// order a `Value` tree writes them, so the bytes are the same).
pub fn text_result(text: &str) -> RawJson {
    #[derive(serde::Serialize)]
    struct Result<'a> {
        content: [Content<'a>; 1],
    }
    #[derive(serde::Serialize)]
    struct Content<'a> {
        text: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    }
    RawJson::new(&Result {
        content: [Content { text, kind: "text" }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(text: &str) -> RawJson {
        RawJson::parse(text).expect("json")
    }

    #[test]
    fn a_text_result_is_the_trees_bytes() {
        for t in [
            "hi",
            "",
            "a \"quoted\" \\ line\nbreak\t",
            "ünï 😀",
            "\u{0}\u{1f}",
            "</script>",
        ] {
            let tree = RawJson::from(json!({"content": [{"type": "text", "text": t}]}));
            assert_eq!(text_result(t).as_str(), tree.as_str(), "{t:?}");
        }
    }

    #[test]
    fn a_call_is_read_without_its_members_being_parsed() {
        let params = raw(
            r#"{"name":"ech\u006f","arguments":{"text":"a\"b"},"_meta":{"progressToken":7},"x":1}"#,
        );
        let call = ToolCall::parse(Some(&params)).expect("a call");
        assert_eq!(call.name, "echo");
        assert_eq!(call.arguments().value(), json!({"text": "a\"b"}));
        assert_eq!(call.meta().value(), json!({"progressToken": 7}));

        let bare = raw(r#"{"name":"test_simple_text"}"#);
        let call = ToolCall::parse(Some(&bare)).expect("a call");
        assert!(matches!(call.name, Cow::Borrowed("test_simple_text")));
        assert_eq!(call.arguments().value(), json!({}));
        assert_eq!(call.meta().value(), json!({}));
    }

    #[test]
    fn params_without_a_string_name_are_no_call() {
        for params in [
            r#"{"arguments":{"text":"hi"}}"#,
            r#"{"name":7}"#,
            r#"["echo"]"#,
            r#" ["echo", {"text": "hi"}]"#,
            r#""echo""#,
        ] {
            assert!(ToolCall::parse(Some(&raw(params))).is_none(), "{params}");
        }
        assert!(ToolCall::parse(None).is_none());
    }

    #[test]
    fn arguments_are_read_in_the_tools_shape_or_not_at_all() {
        #[derive(Deserialize)]
        struct Echo<'a> {
            #[serde(borrow)]
            text: Cow<'a, str>,
        }
        let read = |args: &str| {
            let params = raw(&format!(r#"{{"name":"echo","arguments":{args}}}"#));
            let call = ToolCall::parse(Some(&params)).expect("a call");
            call.arguments().read::<Echo>().map(|e| e.text.into_owned())
        };
        assert_eq!(read(r#"{"text":"hi","more":1}"#).as_deref(), Some("hi"));
        assert_eq!(read(r#"{"text":7}"#), None);
        assert_eq!(read(r#""hi""#), None);
        assert_eq!(read(r#"["hi"]"#), None);
        assert_eq!(read("{}"), None);
        assert!(Arguments::NONE.read::<Echo>().is_none());
        let given = raw(r#"{"text":"hi"}"#);
        assert_eq!(Arguments::of(&given).value(), json!({"text": "hi"}));
    }
}
