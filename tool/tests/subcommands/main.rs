//! The `acp` tool's tests, one binary: a module per subcommand (or pair of them) run end to end
//! through the built `acp`, and one over the tool's and the runtime's own sources. `view.rs` stays
//! a binary of its own: it needs a browser.

/// `acp check` on hand-made faulty transcripts and on live `tap` recordings; `tap` as a pipe.
mod check_and_tap;
/// `acp check` and `acp tap` on composed traffic (chains, proxy envelopes, MCP carriers).
mod composition;
/// `acp conduct`: chains of proxies and an agent, on stdio and on the network.
mod conduct;
/// `acp conform` against raw agents, one broken rule each.
mod conform_agent;
/// `acp conform --client` against the example client and raw clients, one broken rule each.
mod conform_client;
/// No protocol method named by a string literal in `src/` or `tool/src/`.
mod method_names;
/// `acp mock-agent` driven by a Python client.
mod mock_agent;
/// `acp mock-client` against the example echo agent.
mod mock_client;
/// `acp state`: the client's session state replayed from transcripts.
mod state;
