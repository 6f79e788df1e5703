//! A proxy that prefixes the text of every `agent_message_chunk` it forwards (`--prefix TEXT`).
fn main() {}
