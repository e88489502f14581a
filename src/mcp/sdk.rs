//! The "sdk" transport: MCP servers that live inside the SDK application
//! (Python `create_sdk_mcp_server`, TypeScript `createSdkMcpServer`). There
//! is no process and no socket: every JSON-RPC message travels as an
//! `mcp_message` control request on the SDK's control channel, and the
//! SDK's control response carries the server's JSON-RPC answer.
//!
//! The channel itself belongs to the observation plane (the SDK
//! protocol); this module only names what it needs from it, so the MCP
//! client does not depend on the frontend.

use crate::json::Value;
use crate::tools::LocalFuture;

/// Carries one JSON-RPC message to an in-process SDK server and brings
/// back what the SDK answered: the server's JSON-RPC response for a
/// request, an acknowledgement (ignored) for a notification, or why the
/// message could not be delivered.
pub trait Carrier {
    fn carry<'a>(
        &'a self,
        server: &'a str,
        message: Value,
    ) -> LocalFuture<'a, Result<Value, String>>;
}

/// Whether a JSON-RPC message expects an answer (it has an id and a method).
pub(crate) fn is_request(message: &Value) -> bool {
    message.get("id").is_some() && message.get("method").is_some()
}
