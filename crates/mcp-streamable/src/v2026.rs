//! What the 2026-07-28 revision adds to the wire, shared by both cores:
//! the `_meta` keys of the per-request protocol version and capabilities,
//! the requests of the era, the `Mcp-Name` header's field and encoding, and
//! what a `subscriptions/listen` asks for. A leaf: the server core checks
//! these and the client core writes them, neither through the other.

use crate::jsonrpc::Message;

/// The `_meta` key of the per-request protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of the server's description of itself in a result.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The `_meta` key of the per-request client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The `_meta` key naming the listen a notification belongs to.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The requests a 2026-07-28 client may send (2026-07-28 `ClientRequest`).
pub const METHODS: [&str; 10] = [
    "server/discover",
    "completion/complete",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
];

/// The `params` field `Mcp-Name` mirrors, for the methods that need it
/// (the client names it, the server checks it).
pub fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// `_meta[key]` of a request's or notification's params.
pub fn meta(message: &Message, key: &str) -> Option<serde_json::Value> {
    let params = match message {
        Message::Request { params, .. } | Message::Notification { params, .. } => {
            params.as_ref()?
        }
        _ => return None,
    };
    params.to_value().get("_meta")?.get(key).cloned()
}

/// Whether a 2026-07-28 request's headers agree with it (`basic/transports/
/// streamable-http.mdx`, "Server Validation"): `Mcp-Method` is its method,
/// `Mcp-Name` (Base64-decoded when sent as `=?base64?…?=`) the field
/// [`name_field`] names, and for a tool `tools` declares custom headers
/// of, each `Mcp-Param-*` its argument (SEP-2243). `header` gives a
/// header's first value by name. Values are read without surrounding
/// blanks; one with control characters disagrees. Why not, otherwise. The
/// server core refuses such a request (400, -32020); the monitor judges
/// clients and servers by the same rule (M5).
pub fn check_headers<'h>(
    header: impl Fn(&str) -> Option<&'h str>,
    method: &str,
    params: Option<&serde_json::Value>,
    tools: &crate::tool_headers::ToolHeaderTable,
) -> Result<(), String> {
    let read = |name: &str| -> Result<Option<&'h str>, String> {
        let Some(v) = header(name) else {
            return Ok(None);
        };
        let v = v.trim_matches([' ', '\t']);
        if v.chars().any(char::is_control) {
            return Err(format!("{name} has control characters"));
        }
        Ok(Some(v))
    };
    match read(crate::headers::MCP_METHOD)? {
        Some(m) if m == method => {}
        Some(m) => return Err(format!("Mcp-Method {m} but the body says {method}")),
        None => return Err("Mcp-Method header missing".into()),
    }
    let Some(field) = name_field(method) else {
        return Ok(());
    };
    let in_body = params.and_then(|p| p.get(field)).and_then(|f| f.as_str());
    let in_header = read(crate::headers::MCP_NAME)?
        .map(|v| decode_value(v).ok_or_else(|| format!("Mcp-Name {v} is not valid Base64")))
        .transpose()?;
    match (in_header, in_body) {
        (Some(h), Some(b)) if h == b => {}
        (None, _) => return Err("Mcp-Name header missing".into()),
        (Some(h), b) => {
            return Err(format!(
                "Mcp-Name {h} but params.{field} is {}",
                b.unwrap_or("missing")
            ))
        }
    }
    match (method, in_body) {
        ("tools/call", Some(tool)) => {
            tools.check(tool, params.and_then(|p| p.get("arguments")), header)
        }
        _ => Ok(()),
    }
}

/// An `Mcp-Name` or `Mcp-Param-*` value: `=?base64?…?=` (markers exactly
/// so) decoded, any other value as it is; `None` for a sentinel with invalid
/// Base64 (strict: standard alphabet, canonical padding) or UTF-8.
pub fn decode_value(value: &str) -> Option<String> {
    let Some(inner) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, inner).ok()?;
    String::from_utf8(bytes).ok()
}

/// An `Mcp-Name` or `Mcp-Param-*` value: as it is when plain visible ASCII
/// (spaces inside, no tab) without surrounding blanks, else `=?base64?…?=`
/// (as is a plain value that looks like the sentinel, and the empty one,
/// which some intermediaries drop).
pub fn encode_value(value: &str) -> String {
    let visible = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    let blank_edge = value.starts_with(' ') || value.ends_with(' ');
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    if !value.is_empty() && visible && !blank_edge && !looks_encoded {
        return value.to_owned();
    }
    format!(
        "=?base64?{}?=",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, value.as_bytes())
    )
}

/// What a `subscriptions/listen` asks for (its `notifications` param), and
/// after agreement what the server honours.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ListenFilter {
    /// `notifications/tools/list_changed`.
    pub tools: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts: bool,
    /// `notifications/resources/list_changed`.
    pub resources: bool,
    /// `notifications/resources/updated` for these URIs (and their sub-resources).
    pub resource_uris: Vec<String>,
}

impl ListenFilter {
    /// Every kind, any URI: what a server that can send them all honours.
    pub fn all() -> Self {
        ListenFilter {
            tools: true,
            prompts: true,
            resources: true,
            resource_uris: vec![String::new()],
        }
    }

    /// The listen's `params.notifications`; `None` when absent or not an object.
    pub fn from_params(params: Option<&crate::jsonrpc::RawJson>) -> Option<Self> {
        let v = params?.to_value();
        let n = v.get("notifications")?.as_object()?.clone();
        let flag = |k: &str| n.get(k).and_then(serde_json::Value::as_bool) == Some(true);
        Some(ListenFilter {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            resource_uris: n
                .get("resourceSubscriptions")
                .and_then(serde_json::Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|u| u.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// What of `self` the server honours, given what it can send (`can`; an
    /// empty URI in `can.resource_uris` stands for every URI).
    pub fn agreed(&self, can: &ListenFilter) -> ListenFilter {
        let any_uri = can.resource_uris.iter().any(String::is_empty);
        ListenFilter {
            tools: self.tools && can.tools,
            prompts: self.prompts && can.prompts,
            resources: self.resources && can.resources,
            resource_uris: self
                .resource_uris
                .iter()
                .filter(|u| any_uri || can.resource_uris.contains(u))
                .cloned()
                .collect(),
        }
    }

    /// Whether notification `method` (with `params`) is one this filter
    /// subscribed to. Nothing request-scoped ever is.
    pub fn matches(&self, method: &str, params: Option<&serde_json::Value>) -> bool {
        match method {
            "notifications/tools/list_changed" => self.tools,
            "notifications/prompts/list_changed" => self.prompts,
            "notifications/resources/list_changed" => self.resources,
            "notifications/resources/updated" => {
                let Some(uri) = params.and_then(|p| p.get("uri")).and_then(|u| u.as_str()) else {
                    return false;
                };
                self.resource_uris.iter().any(|sub| {
                    uri == sub
                        || uri
                            .strip_prefix(sub.as_str())
                            .is_some_and(|rest| rest.starts_with(['/', '#', '?']))
                })
            }
            _ => false,
        }
    }

    /// The filter as the acknowledgement states it (only what is honoured).
    pub fn to_json(&self) -> serde_json::Value {
        let mut n = serde_json::Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                n.insert(key.into(), true.into());
            }
        }
        if !self.resource_uris.is_empty() {
            n.insert(
                "resourceSubscriptions".into(),
                self.resource_uris.clone().into(),
            );
        }
        serde_json::Value::Object(n)
    }
}
