//! Authentication as the client sees it: the methods an agent lists in its `initialize` answer
//! (`authMethods`, v1 and v2), in one version-agnostic form, and the refusal of a request until
//! the client authenticated (`auth_required`, -32000), which carries those methods so that the
//! caller can say which to use.

use acp_types::support::rpc::RpcError;
use acp_types::{v1, v2};

/// One authentication method the agent listed in its `initialize` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthMethod {
    /// Its id, the one to pass to `authenticate` (v1) / `auth/login` (v2).
    pub id: String,
    /// Its human-readable name.
    pub name: String,
    /// Its `type` on the wire: `agent` (v1's default when the type is left out), `terminal`, or
    /// another value a newer schema or an extension defines.
    pub kind: String,
}

impl AuthMethod {
    /// Whether the agent runs this method's flow itself, through `authenticate` / `auth/login`:
    /// only an `agent` method does. A `terminal` method is not passed to either ("Client runs
    /// the configured agent program as a separate interactive process, without passing this
    /// method to `authenticate`", v1 and v2 `AuthMethod`), and a type this client does not know
    /// defines no login flow it can rely on ("Clients MUST call this method only with a method
    /// whose type defines a protocol-driven login flow", v2 `auth/login`).
    pub fn is_protocol_driven(&self) -> bool {
        self.kind == "agent"
    }

    /// The methods of a v1 `initialize` answer.
    pub fn of_v1(methods: &[v1::AuthMethod]) -> Vec<AuthMethod> {
        methods
            .iter()
            .filter_map(|m| match m {
                v1::AuthMethod::Agent(a) => Some(Self::new(&a.id.0, &a.name, "agent")),
                v1::AuthMethod::Terminal(t) => Some(Self::new(&t.id.0, &t.name, "terminal")),
                // v1 names the id `id`; a kept unknown variant is read the same way.
                v1::AuthMethod::Other(o) => {
                    Some(Self::new(o.get_str("id")?, o.get_str("name").unwrap_or(""), o.get_str("type")?))
                }
            })
            .collect()
    }

    /// The methods of a v2 `initialize` answer.
    pub fn of_v2(methods: &[v2::AuthMethod]) -> Vec<AuthMethod> {
        methods
            .iter()
            .filter_map(|m| match m {
                v2::AuthMethod::Agent(a) => Some(Self::new(&a.method_id.0, &a.name, "agent")),
                v2::AuthMethod::Terminal(t) => Some(Self::new(&t.method_id.0, &t.name, "terminal")),
                v2::AuthMethod::Other(o) => {
                    Some(Self::new(o.get_str("methodId")?, o.get_str("name").unwrap_or(""), o.get_str("type")?))
                }
            })
            .collect()
    }

    fn new(id: &str, name: &str, kind: &str) -> Self {
        AuthMethod { id: id.to_string(), name: name.to_string(), kind: kind.to_string() }
    }
}

impl std::fmt::Display for AuthMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.name.is_empty(), self.kind.as_str()) {
            (true, "agent") => write!(f, "{}", self.id),
            (true, kind) => write!(f, "{} ({kind})", self.id),
            (false, "agent") => write!(f, "{} ({})", self.id, self.name),
            (false, kind) => write!(f, "{} ({}, {kind})", self.id, self.name),
        }
    }
}

/// A request the agent refused with `auth_required` (-32000): its error, and the methods its
/// `initialize` answer listed (empty when it listed none).
#[derive(Debug, Clone, PartialEq)]
pub struct AuthRequired {
    /// The agent's error, as answered.
    pub error: RpcError,
    /// The methods the agent listed in its `initialize` answer.
    pub methods: Vec<AuthMethod>,
}

impl std::fmt::Display for AuthRequired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the agent requires authentication ({}: {})", self.error.code, self.error.message)?;
        if self.methods.is_empty() {
            return f.write_str(", and listed no authMethods in its initialize answer");
        }
        f.write_str("; its authMethods: ")?;
        for (i, method) in self.methods.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{method}")?;
        }
        Ok(())
    }
}
